/** How the client moves bytes. The CLI uses node:http (fast start); long-lived callers use undici. */
export interface HttpResponse { status: number, text: string }
export interface HttpRequest {
  method: string
  url: string
  body?: string | Uint8Array
  headers?: Record<string, string>
  timeoutMs: number
}
export interface HttpTransport {
  request: (req: HttpRequest) => Promise<HttpResponse>
  close?: () => Promise<void>
}
