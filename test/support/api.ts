import { routes } from '#functions/routes.ts';
import { startHttpGateway } from '#infra/local/http-gateway.ts';

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface Api {
  url: string;
  request<T = any>(method: string, path: string, options?: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> }): Promise<Reply<T>>;
  close(): Promise<void>;
}

/** The local API Gateway with every route of the table, on an ephemeral port, spoken to over real HTTP. */
export async function startApi(): Promise<Api> {
  const gateway = await startHttpGateway({ port: 0, host: '127.0.0.1', routes });
  return {
    url: gateway.url,
    async request(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      let body = options.rawBody;
      if (options.body !== undefined) {
        headers['content-type'] ??= 'application/json';
        body = JSON.stringify(options.body);
      }
      const response = await fetch(`${gateway.url}${path}`, { method, headers, body });
      const text = await response.text();
      return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
    },
    close: () => gateway.close(),
  };
}
