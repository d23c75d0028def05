import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { ErrorCode, RbtError } from '../../util/errors.js'

/** Binds a Hono app's fetch to host:port; a port in use is one clear CONFIG error. */
export async function listen (fetch: Parameters<typeof serve>[0]['fetch'], host: string, port: number, what: string): Promise<Server> {
  return await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch, port, hostname: host }, () => { resolve(s as Server) }) as Server
    s.once('error', (e: NodeJS.ErrnoException) => {
      reject(new RbtError(ErrorCode.CONFIG, e.code === 'EADDRINUSE'
        ? `${what} port ${port} on ${host} is already in use (another node? pick another -n or -port)`
        : `cannot listen on ${host}:${port}: ${e.message}`, { cause: e }))
    })
  })
}

/** Stops accepting, closes idle connections now and the rest after 2 s. */
export async function closeServer (s: Server): Promise<void> {
  await new Promise<void>((resolve) => {
    s.close(() => { resolve() })
    ;(s as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.()
    setTimeout(() => { (s as unknown as { closeAllConnections?: () => void }).closeAllConnections?.() }, 2000).unref()
  })
}

export const portOf = (s: Server): number => (s.address() as AddressInfo).port
