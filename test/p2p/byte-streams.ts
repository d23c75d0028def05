/**
 * Byte-stream helpers shared by the transport tests: collect, send in chunks, echo.
 */
import type { MessageStream, Stream } from '@libp2p/interface'

/** The bytes of a message event's data. */
export const bytesOf = (data: Uint8Array | { subarray: () => Uint8Array }): Uint8Array => data instanceof Uint8Array ? data : data.subarray()

export function concat (parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0))
  let at = 0
  for (const p of parts) { out.set(p, at); at += p.byteLength }
  return out
}

/** Collects what arrives on `stream` until `bytes` have come. */
export function receive (stream: MessageStream, bytes: number, timeoutMs = 5000): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const parts: Uint8Array[] = []
    let got = 0
    const timer = setTimeout(() => { done(); reject(new Error(`received ${got}/${bytes} bytes`)) }, timeoutMs)
    const onMessage = (evt: { data: Uint8Array | { subarray: () => Uint8Array } }): void => {
      const b = bytesOf(evt.data)
      parts.push(b.slice())
      got += b.byteLength
      if (got >= bytes) { done(); resolve(concat(parts)) }
    }
    const onClose = (): void => { done(); reject(new Error(`closed after ${got}/${bytes} bytes`)) }
    const done = (): void => {
      clearTimeout(timer)
      stream.removeEventListener('message', onMessage)
      stream.removeEventListener('close', onClose)
    }
    stream.addEventListener('message', onMessage)
    stream.addEventListener('close', onClose)
  })
}

/** Sends `data` in chunks of the given sizes (cycled), waiting for drain when asked to. */
export async function sendChunked (stream: MessageStream, data: Uint8Array, sizes: number[]): Promise<void> {
  let at = 0
  for (let i = 0; at < data.byteLength; i++) {
    const end = Math.min(data.byteLength, at + sizes[i % sizes.length])
    if (!stream.send(data.subarray(at, end))) await stream.onDrain()
    at = end
  }
}

/** Sends back everything it reads, then closes its end. */
export async function echoHandler (stream: Stream): Promise<void> {
  try {
    for await (const chunk of stream) {
      if (!stream.send(chunk)) await stream.onDrain()
    }
    await stream.close()
  } catch (e) {
    stream.abort(e as Error)
  }
}

/** Writes `data` on a new stream and returns what comes back before the remote closes. */
export async function echoRoundTrip (stream: Stream, data: Uint8Array, sizes = [data.byteLength]): Promise<Uint8Array> {
  const parts: Uint8Array[] = []
  const reading = (async () => { for await (const c of stream) parts.push(bytesOf(c).slice()) })()
  await sendChunked(stream, data, sizes)
  await stream.close()
  await reading
  return concat(parts)
}
