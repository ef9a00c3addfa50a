/** The API as the pages call it: Bearer token, JSON, the error envelope read into an ApiError. */

export class ApiError extends Error {
  constructor(
    /** The HTTP status; 0 when the API could not be reached. */
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface ApiClient {
  readonly baseUrl: string;
  get<T>(path: string, params?: URLSearchParams, signal?: AbortSignal): Promise<T>;
  /**
   * A write (POST, PUT, PATCH, DELETE) with an optional JSON body and request headers (an Idempotency-Key); the
   * reply's JSON, or undefined for 204.
   */
  send<T>(
    method: string,
    path: string,
    body?: unknown,
    params?: URLSearchParams,
    headers?: Record<string, string>,
  ): Promise<T>;
  download(path: string, params: URLSearchParams): Promise<{ blob: Blob; filename: string }>;
}

interface ErrorEnvelope {
  error?: { code?: string; message?: string; details?: { path?: string; message?: string }[] };
  message?: string;
}

async function errorOf(response: Response): Promise<ApiError> {
  const body = (await response.json().catch(() => undefined)) as ErrorEnvelope | undefined;
  const detail = body?.error?.details?.find((issue) => issue.message);
  const message = [
    body?.error?.message ?? body?.message ?? response.statusText,
    detail && `${detail.path ?? ''}: ${detail.message}`,
  ]
    .filter(Boolean)
    .join(' — ');
  return new ApiError(response.status, body?.error?.code ?? String(response.status), message);
}

const filenameOf = (disposition: string | null, fallback: string) =>
  /filename="?([^";]+)"?/.exec(disposition ?? '')?.[1] ?? fallback;

export function apiClient(baseUrl: string, token: string): ApiClient {
  const call = async (path: string, params: URLSearchParams | undefined, signal?: AbortSignal, init?: RequestInit) => {
    const query = params?.toString();
    let response: Response;
    try {
      response = await fetch(`${baseUrl}/api/v1${path}${query ? `?${query}` : ''}`, {
        ...init,
        headers: {
          ...(init?.headers as Record<string, string> | undefined),
          authorization: `Bearer ${token}`,
          ...(init?.body ? { 'content-type': 'application/json' } : {}),
        },
        signal,
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new ApiError(0, 'NETWORK', error instanceof Error ? error.message : String(error));
    }
    if (!response.ok) throw await errorOf(response);
    return response;
  };
  return {
    baseUrl,
    async get<T>(path: string, params?: URLSearchParams, signal?: AbortSignal) {
      return (await (await call(path, params, signal)).json()) as T;
    },
    async send<T>(
      method: string,
      path: string,
      body?: unknown,
      params?: URLSearchParams,
      headers?: Record<string, string>,
    ) {
      const response = await call(path, params, undefined, {
        method,
        body: body === undefined ? undefined : JSON.stringify(body),
        headers,
      });
      return (response.status === 204 ? undefined : await response.json()) as T;
    },
    async download(path, params) {
      const response = await call(path, params);
      return {
        blob: await response.blob(),
        filename: filenameOf(
          response.headers.get('content-disposition'),
          `audit-logs.${params.get('format') ?? 'json'}`,
        ),
      };
    },
  };
}

/** What went wrong, in words a reader can act on. */
export function describeError(error: unknown, baseUrl: string): string {
  if (!(error instanceof ApiError))
    return `Something went wrong: ${error instanceof Error ? error.message : String(error)}`;
  const where = baseUrl || location.origin;
  switch (error.status) {
    case 0:
      return `Cannot reach the API at ${where}. Check that the server is running and try again.`;
    case 401:
      return `The server refused the token (401: ${error.message}). It may have expired; sign in with a fresh one.`;
    case 403:
      return `This token may not do that (403: ${error.message}).`;
    case 404:
      return `Not found (404): ${error.message}.`;
    case 400:
      return `The server refused the request (400): ${error.message}.`;
    case 413:
      return `Too large for one download (413): ${error.message}. Narrow the time range or the filters.`;
    case 503:
      return `The service is unavailable right now (503): ${error.message}. Try again in a few seconds.`;
    default:
      return `The server answered ${error.status}: ${error.message}.`;
  }
}
