import { z } from 'zod'
import { didString, multiaddrString, peerIdString, peersBody } from './schemas.js'

/**
 * The one table of HTTP routes shared by the server (validation, routing, OpenAPI) and the client.
 * A route is data: method, path (Hono syntax for params), schemas for body/query/params.
 */
export type Method = 'GET' | 'POST'

export interface RouteDef<B extends z.ZodType | undefined = z.ZodType | undefined, Q extends z.ZodType | undefined = z.ZodType | undefined> {
  method: Method
  path: string
  summary: string
  body?: B
  query?: Q
  /** multipart/form-data upload (validated by the route itself). */
  multipart?: boolean
  /** true when the first answer may be the two-step "Password needed" challenge. */
  async?: boolean
  tags: string[]
}

function route<B extends z.ZodType | undefined = undefined, Q extends z.ZodType | undefined = undefined> (def: RouteDef<B, Q>): RouteDef<B, Q> {
  return def
}

export const routes = {
  // ---- node
  nodeStart: route({ method: 'GET', path: '/svc/v1/node/start', summary: 'Starts the core (p2p host and services)', tags: ['node'] }),
  nodeShutdown: route({ method: 'POST', path: '/svc/v1/node/shutdown', summary: 'Shuts the node down gracefully', tags: ['node'] }),
  nodePeerId: route({ method: 'GET', path: '/svc/v1/node/peer_id', summary: "This node's peer id (in result and in message)", tags: ['node'] }),
  nodePing: route({
    method: 'GET',
    path: '/svc/v1/node/ping',
    summary: 'Pings a peer with a real libp2p round trip',
    query: z.object({ peerID: peerIdString }),
    tags: ['node']
  }),
  nodeAddPeers: route({
    method: 'POST',
    path: '/svc/v1/node/add_peers',
    summary: "Maps a peer's DID to its peer id (persisted)",
    body: z.object({ DID: didString, PeerID: peerIdString, DIDType: z.number().int().min(0).max(4).optional() }),
    tags: ['node']
  }),
  nodeStatus: route({ method: 'GET', path: '/svc/v1/node/status', summary: 'Node status: core, peer id, listen addresses, connected peers', tags: ['node'] }),
  // ---- bootstrap
  bootstrapAdd: route({ method: 'POST', path: '/svc/v1/bootstrap/add', summary: 'Adds bootstrap peers and dials them', body: peersBody, tags: ['bootstrap'] }),
  bootstrapRemove: route({ method: 'POST', path: '/svc/v1/bootstrap/remove', summary: 'Removes bootstrap peers', body: peersBody, tags: ['bootstrap'] }),
  bootstrapList: route({ method: 'GET', path: '/svc/v1/bootstrap', summary: 'Lists bootstrap peers', tags: ['bootstrap'] }),
  bootstrapRemoveAll: route({ method: 'POST', path: '/svc/v1/bootstrap/remove_all', summary: 'Removes all bootstrap peers', tags: ['bootstrap'] }),
  // ---- meta
  openapi: route({ method: 'GET', path: '/svc/v1/openapi.json', summary: 'This API as an OpenAPI 3 document', tags: ['meta'] })
} as const

export type RouteId = keyof typeof routes
export type BodyOf<R extends RouteId> = (typeof routes)[R] extends RouteDef<infer B, any> ? (B extends z.ZodType ? z.input<B> : undefined) : undefined
export type QueryOf<R extends RouteId> = (typeof routes)[R] extends RouteDef<any, infer Q> ? (Q extends z.ZodType ? z.input<Q> : undefined) : undefined

/** Result payload types per route (what `result` holds on success). */
export interface ResultTypes {
  nodeStart: null
  nodeShutdown: null
  nodePeerId: string
  nodePing: { peerID: string, rtt_ms: number }
  nodeAddPeers: null
  nodeStatus: NodeStatus
  bootstrapAdd: { peers: string[] }
  bootstrapRemove: { peers: string[] }
  bootstrapList: { peers: string[] }
  bootstrapRemoveAll: { peers: string[] }
  openapi: unknown
}
export type ResultOf<R extends RouteId> = R extends keyof ResultTypes ? ResultTypes[R] : unknown

export interface NodeStatus {
  version: string
  core_started: boolean
  peer_id: string | null
  listen: string[]
  connected_peers: number
  test_net: boolean
  api: string
  grpc: string
}

export { multiaddrString }

/** Fill `:name` params of a route path. */
export function buildPath (path: string, params: Record<string, string> = {}): string {
  return path.replace(/:([A-Za-z_]+)/g, (_m, name: string) => {
    const v = params[name]
    if (v === undefined) throw new Error(`missing path parameter ${name}`)
    return encodeURIComponent(v)
  })
}
