/**
 * The NFT verbs' shared part: one POST /svc/v1/tx with a tokens.nft entry, driven through the
 * two-step password flow, and the value flag's check.
 */
import type { Envelope } from '../api/contract/envelope.js'
import type { NftTxResult } from '../api/contract/nft-results.js'
import type { RbtClient } from '../client/rbt-client.js'
import { UsageError, type BaseFlags } from './base-command.js'
import { completeTwoStep } from './password.js'

/** -nftValue: a positive RBT amount with at most 3 decimals. */
export function nftValueFrom (flags: BaseFlags): number {
  const raw = flags.nftValue
  if (raw === undefined || raw === '') throw new UsageError('-nftValue is required: the NFT value in RBT (e.g. 1 or 0.5)')
  if (!/^\d+(\.\d{1,3})?$/.test(raw) || Number(raw) <= 0) throw new UsageError(`-nftValue must be a positive number with at most 3 decimals, got "${raw}"`)
  return Number(raw)
}

/** -quorumType: the reference's scripts pass 2 (the configured quorum list); nothing else exists here. */
export function checkQuorumType (flags: BaseFlags): void {
  const q = flags.quorumType
  if (q !== undefined && q !== '' && q !== '2') throw new UsageError(`-quorumType ${q} is not available: this node uses its configured quorum list (-quorumType 2)`)
}

export interface NftTxInput {
  initiator: string
  owner: string
  nftId: string
  value: number
  data: string
  transfer: boolean
  memo: string
}

export async function nftTransaction (client: RbtClient, flags: BaseFlags, i: NftTxInput): Promise<Envelope<NftTxResult>> {
  checkQuorumType(flags)
  const first = await client.call('txInitiate', {
    body: {
      initiator: i.initiator,
      owner: i.owner,
      tokens: { nft: [{ nftId: i.nftId, value: i.value, data: i.data }], transferNftOwnership: i.transfer },
      memo: i.memo
    }
  })
  return await completeTwoStep(client, first, flags) as Envelope<NftTxResult>
}
