export interface ClientOptions {
  baseUrl: string;
  timeoutMs?: number;
}

export function makeClient(opts: ClientOptions) {
  return { url: opts.baseUrl, timeout: opts.timeoutMs ?? 5000 };
}
