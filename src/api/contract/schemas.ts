import { z } from 'zod'
import { DID_HINT, DID_PATTERN, PEER_ADDRESS_HINT, PEER_ID_HINT, PEER_ID_PATTERN, isPeerAddress } from './patterns.js'

/** Shared field schemas: one definition of what a DID, a peer id or a multiaddr looks like. */
export const didString = z.string()
  .regex(DID_PATTERN, `Invalid DID: ${DID_HINT}`)
  .describe('DID string (CIDv1, dag-pb, sha3-256, base32)')

export const peerIdString = z.string()
  .regex(PEER_ID_PATTERN, `Invalid PeerID: ${PEER_ID_HINT}`)
  .describe('libp2p peer id')

/** A fullnode named in a request: a peer id or a multiaddr ending with /p2p/<peer id>; "" means none. */
export const fullnodeString = z.string()
  .max(400)
  .refine((s) => s === '' || isPeerAddress(s), `Invalid fullnode: expected ${PEER_ADDRESS_HINT}`)

export const multiaddrString = z.string()
  .min(1)
  .refine((s) => s.startsWith('/'), 'Invalid bootstrap peer: a multiaddress starts with /')
  .describe('full multiaddress, e.g. /ip4/127.0.0.1/tcp/4002/p2p/12D3KooW...')

export const peersBody = z.object({
  peers: z.array(multiaddrString).min(1, 'Bootstrap peers required').max(256)
})

export const emptyBody = z.object({}).optional()

/** POST /svc/v1/dids/create (JSON form; the multipart form carries the same fields in did_config). */
export const didCreateBody = z.object({
  type: z.number().int().min(0).max(4).optional().describe('DID type: 0 basic, 1 standard, 2 wallet, 4 lite (default 4 for JSON bodies)'),
  password: z.string().max(1024).optional().describe('private key password (default mypassword)'),
  quorum_password: z.string().max(1024).optional(),
  secret: z.string().max(1024).optional().describe('image secret for types 0 and 1'),
  public_key: z.string().regex(/^[0-9a-fA-F]*$/, 'public_key must be hex').max(1024).optional(),
  private_key: z.string().max(4096).optional().describe("path of an existing private key file on the node's disk"),
  mnemonic: z.string().max(1024).optional(),
  childPath: z.number().int().min(0).max(0xffffffff).optional()
})

/** POST /svc/v1/signature and the legacy /api/signature-response. */
export const signatureBody = z.object({
  id: z.string().min(1, 'id is required').max(128),
  mode: z.number().int().optional(),
  password: z.string().max(1024).optional(),
  signature: z.union([
    z.string().max(4096),
    z.object({ Pixels: z.string().max(4096).optional(), Signature: z.string().max(4096).optional() })
  ]).optional(),
  pixels: z.string().max(4096).optional(),
  /** true: cancel the operation waiting under `id` instead of answering it */
  cancel: z.boolean().optional()
})
