/** How the client moves bytes. The CLI uses node:http (fast start); long-lived callers use undici. */
export interface HttpResponse { status: number, text: string }
/**
 * A body sent as it is read (a file upload), never held whole: its exact length and its chunks.
 * A chunk's memory may be reused for a later chunk: a transport asks for the next chunk only once
 * it wrote this one, and waits for the socket to drain whenever a write says so (a stream that
 * reads ahead, like Readable.from, must not sit in between).
 */
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
