import { z } from 'zod'

/** Shared field schemas: one definition of what a DID, a peer id or a multiaddr looks like. */
export const didString = z.string()
  .regex(/^bafybmi[a-z2-7]{52}$/, 'Invalid DID: expected 59 characters starting with bafybmi')
  .describe('DID string (CIDv1, dag-pb, sha3-256, base32)')

export const peerIdString = z.string()
  .regex(/^12D3KooW[1-9A-HJ-NP-Za-km-z]{44}$/, 'Invalid PeerID: expected 52 characters starting with 12D3KooW')
  .describe('libp2p peer id')

export const multiaddrString = z.string()
  .min(1)
  .refine((s) => s.startsWith('/'), 'Invalid bootstrap peer: a multiaddress starts with /')
  .describe('full multiaddress, e.g. /ip4/127.0.0.1/tcp/4002/p2p/12D3KooW...')

export const peersBody = z.object({
  peers: z.array(multiaddrString).min(1, 'Bootstrap peers required').max(256)
})

export const emptyBody = z.object({}).optional()
