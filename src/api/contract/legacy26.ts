/**
 * The release-2.6 ("Yamato") endpoints, served on their own port (1898 in the reference). All POST
 * with a JSON body; every reply is the 2.6 envelope `{data, message, status}` with status the string
 * "true" or "false". Shared by the legacy server and its tests.
 */
import { z } from 'zod'

export interface Legacy26Envelope<T = unknown> {
  data: T | null
  message: string
  status: 'true' | 'false'
}

const password = z.string({ error: 'pvtKeyPass is required' }).min(1, 'pvtKeyPass must not be empty')
/** 0 or 1; Java clients send either numbers or numeric strings */
const flag01 = z.union([z.literal(0), z.literal(1), z.literal('0'), z.literal('1')]).transform((v) => Number(v) as 0 | 1)
const hash = z.string().min(1).max(4096)

export const legacy26Routes = {
  generateEcDSAKeys: { path: '/generateEcDSAKeys', body: z.object({ pvtKeyPass: password, returnKey: flag01.default(0) }) },
  generateQuorumKeys: { path: '/generateQuorumKeys', body: z.object({ pvtKeyPass: password, returnKey: flag01.default(0) }) },
  startQuorumService: { path: '/startQuorumService', body: z.object({ pvtKeyPass: password }) },
  initiateTransaction: {
    path: '/initiateTransaction',
    body: z.object({
      receiver: z.string().min(1, 'receiver is required'),
      tokenCount: z.union([z.number(), z.string()]),
      comment: z.string().max(4096).default(''),
      type: z.union([z.literal(1), z.literal(2), z.literal('1'), z.literal('2')]).transform((v) => Number(v) as 1 | 2).default(1),
      pvtKeyPass: z.string().optional()
    })
  },
  unpledgeToken: { path: '/unpledgeToken', body: z.object({ tokenList: z.union([hash, z.array(hash).min(1).max(100)]) }) },
  verifyPoW: {
    path: '/verifyPoW',
    body: z.object({
      tokenList: hash,
      receiver: z.string().min(1),
      transactionID: z.string().min(1),
      /** the proof to check; absent: the proof this node stored when it released the token */
      proof: z.object({ token: z.string(), pledger: z.string(), txid: z.string(), level: z.number(), every: z.number(), hashes: z.array(z.string()).max(10_000_000) }).optional()
    })
  }
} as const

export type Legacy26RouteId = keyof typeof legacy26Routes
export type Legacy26Body<R extends Legacy26RouteId> = z.output<(typeof legacy26Routes)[R]['body']>

/** What a release-2.6 operation answers with (the server turns it into the envelope). */
export interface Legacy26Reply { ok: boolean, message: string, data: unknown }

export interface Legacy26Api {
  generateKeys: (role: 'transaction' | 'quorum', body: Legacy26Body<'generateEcDSAKeys'>) => Promise<Legacy26Reply>
  startQuorumService: (body: Legacy26Body<'startQuorumService'>) => Promise<Legacy26Reply>
  initiateTransaction: (body: Legacy26Body<'initiateTransaction'>) => Promise<Legacy26Reply>
  unpledgeToken: (body: Legacy26Body<'unpledgeToken'>) => Promise<Legacy26Reply>
  verifyPoW: (body: Legacy26Body<'verifyPoW'>) => Promise<Legacy26Reply>
}
