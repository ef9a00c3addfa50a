import { afterAll, beforeAll } from 'vitest';
import { defaultRoute, routes, wsRoutes } from '#functions/routes.ts';
import { routeMatcher, startHttpGateway } from '#infra/local/http-gateway.ts';
import { startWsGateway, useLocalManagementApi } from '#infra/local/ws-gateway.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';
import { checkReply } from './reply-schema.ts';

const routeOf = routeMatcher(Object.keys(routes));

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface Api {
  url: string;
  /** The local WebSocket gateway agents connect to (live queries). */
  wsUrl: string;
  request<T = any>(
    method: string,
    path: string,
    options?: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<Reply<T>>;
  close(): Promise<void>;
}

/**
 * The local API Gateways (HTTP and WebSocket) with every route of the tables, on ephemeral ports, spoken to over real
 * HTTP. Every 2xx reply is held to its route's document (status and response schema): a drift fails the test.
 */
export async function startApi(): Promise<Api> {
  const gateway = await startHttpGateway({ port: 0, host: '127.0.0.1', routes, defaultRoute });
  const ws = await startWsGateway({ port: 0, host: '127.0.0.1', routes: wsRoutes });
  useLocalManagementApi(ws);
  return {
    url: gateway.url,
    wsUrl: ws.url,
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
      const reply = { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
      const routeKey = routeOf(method, path.split('?')[0]!);
      if (routeKey && reply.status >= 200 && reply.status < 300)
        checkReply(routeKey, routes[routeKey as keyof typeof routes], reply.status, reply.body);
      return reply;
    },
    close: () => Promise.all([gateway.close(), ws.close()]).then(() => undefined),
  };
}

/**
 * Registers the hooks of an end-to-end test file: before all, a fresh cloned database and then
 * the API on it; after all, the API closed and then the database. Call it at the top of the file,
 * before the file's own beforeAll, which then runs after these. The values are read through
 * getters, since they exist only once the hooks have run.
 */
export function useApi(): { readonly db: TestDatabase; readonly api: Api } {
  let db: TestDatabase | undefined;
  let api: Api | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    api = await startApi();
  });
  afterAll(async () => {
    try {
      await api?.close();
    } finally {
      await db?.close();
    }
  });
  return {
    get db() {
      if (!db) throw new Error('useApi: the test database exists only once its beforeAll has run');
      return db;
    },
    get api() {
      if (!api) throw new Error('useApi: the API exists only once its beforeAll has run');
      return api;
    },
  };
}
