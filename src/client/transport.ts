/** How the client moves bytes. The CLI uses node:http (fast start); long-lived callers use undici. */
export interface HttpResponse { status: number, text: string }
/** A body sent as it is read (a file upload), never held whole: its exact length and its chunks. */
export interface StreamBody { length: number, chunks: () => AsyncIterable<Uint8Array> }
export interface HttpRequest {
  method: string
  url: string
  body?: string | Uint8Array | StreamBody
  headers?: Record<string, string>
  timeoutMs: number
}
export interface HttpTransport {
  request: (req: HttpRequest) => Promise<HttpResponse>
  close?: () => Promise<void>
}
