import { z } from 'zod'
import { didString, multiaddrString, peerIdString, peersBody } from './schemas.js'
import { paths, type RouteId } from './paths.js'

/**
 * The one table of HTTP routes shared by the server (validation, routing, OpenAPI) and the client:
 * method and path come from paths.ts, the schemas for body and query are declared here once.
 */
export type Method = 'GET' | 'POST'

interface RouteSpec<B extends z.ZodType | undefined = z.ZodType | undefined, Q extends z.ZodType | undefined = z.ZodType | undefined> {
  summary: string
  body?: B
  query?: Q
  /** multipart/form-data upload (validated by the route itself). */
  multipart?: boolean
  /** true when the first answer may be the two-step "Password needed" challenge. */
  async?: boolean
  tags: string[]
}

export interface RouteDef<B extends z.ZodType | undefined = z.ZodType | undefined, Q extends z.ZodType | undefined = z.ZodType | undefined> extends RouteSpec<B, Q> {
  method: Method
  path: string
}

function route<B extends z.ZodType | undefined = undefined, Q extends z.ZodType | undefined = undefined> (def: RouteSpec<B, Q>): RouteSpec<B, Q> {
  return def
}

const specs = {
  // ---- node
  nodeStart: route({ summary: 'Starts the core (p2p host and services)', tags: ['node'] }),
  nodeShutdown: route({ summary: 'Shuts the node down gracefully', tags: ['node'] }),
  nodePeerId: route({ summary: "This node's peer id (in result and in message)", tags: ['node'] }),
  nodePing: route({
    summary: 'Pings a peer with a real libp2p round trip',
    query: z.object({ peerID: peerIdString }),
    tags: ['node']
  }),
  nodeAddPeers: route({
    summary: "Maps a peer's DID to its peer id (persisted)",
    body: z.object({ DID: didString, PeerID: peerIdString, DIDType: z.number().int().min(0).max(4).optional() }),
    tags: ['node']
  }),
  nodeStatus: route({ summary: 'Node status: core, peer id, listen addresses, connected peers', tags: ['node'] }),
  // ---- bootstrap
  bootstrapAdd: route({ summary: 'Adds bootstrap peers and dials them', body: peersBody, tags: ['bootstrap'] }),
  bootstrapRemove: route({ summary: 'Removes bootstrap peers', body: peersBody, tags: ['bootstrap'] }),
  bootstrapList: route({ summary: 'Lists bootstrap peers', tags: ['bootstrap'] }),
  bootstrapRemoveAll: route({ summary: 'Removes all bootstrap peers', tags: ['bootstrap'] }),
  // ---- meta
  openapi: route({ summary: 'This API as an OpenAPI 3 document', tags: ['meta'] })
} as const satisfies Record<RouteId, RouteSpec>

type Routes = { [K in RouteId]: (typeof specs)[K] & (typeof paths)[K] }
export const routes: Routes = Object.fromEntries(Object.entries(specs).map(([id, spec]) => [id, { ...spec, ...paths[id as RouteId] }])) as unknown as Routes
export type { RouteId }
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
export { buildPath } from './paths.js'
