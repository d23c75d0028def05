import type { Hono } from 'hono'

/** What the shape tests of the reference's /api routes share (test/api/legacy-*.test.ts). */
export const PEER = '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'
export const ALICE = 'bafybmi' + 'a'.repeat(52)
export const BOB = 'bafybmi' + 'b'.repeat(52)
/** The first answer of an operation that needs a password (the two-step flow). */
export const CHALLENGE = { status: true, message: 'Password needed', result: { id: 'op1', mode: 4, hash: null, only_priv_key: false } }

export interface Env { status: boolean, message: string, result: any, [k: string]: unknown }

/** One request to the app: a FormData body goes as multipart, anything else as JSON. */
export async function call (app: Hono, method: string, path: string, body?: unknown): Promise<{ status: number, env: Env }> {
  const init: RequestInit = { method }
  if (body instanceof FormData) init.body = body
  else if (body !== undefined) { init.body = JSON.stringify(body); init.headers = { 'content-type': 'application/json' } }
  const res = await app.request(path, init)
  return { status: res.status, env: await res.json() as Env }
}
