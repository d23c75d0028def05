/** How the client moves bytes. The CLI uses node:http (fast start); long-lived callers use undici. */
export interface HttpResponse { status: number, text: string }
/**
 * A body sent as it is read (a file upload), never held whole: its exact length and its chunks.
 * A chunk's memory is reused for a later chunk only with a transport that says it sends chunks in
 * turn (`HttpTransport.sendsChunksInTurn`).
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
  /**
   * True when the transport asks for a streamed body's next chunk only once it wrote this one and
   * waits for the socket to drain whenever a write says so (no stream reading ahead in between):
   * the chunks of a file upload may then share a few buffers. Both transports here do.
   */
  sendsChunksInTurn?: boolean
  close?: () => Promise<void>
}
