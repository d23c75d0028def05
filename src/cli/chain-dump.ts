import { writeFileDurable } from '../util/durable-write.js'
import { resolve } from 'node:path'
import type { Envelope } from '../api/contract/envelope.js'
import type { ResultOf } from '../api/contract/routes.js'
import type { RbtClient } from '../client/rbt-client.js'

export type ChainDump = ResultOf<'tokenChain'>

/**
 * The whole chain of a token, NFT or smart contract (every page followed), each block with its
 * map in the reference's dump form (`maps=true`).
 */
export async function wholeChainWithMaps (client: RbtClient, id: string): Promise<Envelope<ChainDump>> {
  let env = await client.call('tokenChain', { params: { token_id: id }, query: { maps: 'true' } })
  const first = env.result!
  const blocks = [...first.blocks]
  let next = first.next_block_id
  while (next !== '') {
    env = await client.call('tokenChain', { params: { token_id: id }, query: { block_id: next, maps: 'true' } })
    blocks.push(...env.result!.blocks)
    next = env.result!.next_block_id
  }
  return { ...env, result: { ...first, blocks, next_block_id: '' } }
}

/**
 * Writes the blocks' maps as the reference's CLI writes its dumps (a JSON array, in the current
 * directory: dump.json for tokens and contracts, nft.json for NFTs); returns the path written.
 */
export async function writeReferenceDump (file: string, dump: ChainDump): Promise<string> {
  const path = resolve(file)
  await writeFileDurable(path, JSON.stringify(dump.blocks.map((b) => b.map ?? {})))
  return path
}

/** The dump without the maps (what a command prints). */
export function withoutMaps (dump: ChainDump): ChainDump {
  return { ...dump, blocks: dump.blocks.map(({ map: _map, ...b }) => b) }
}
