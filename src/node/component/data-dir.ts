import { join } from 'node:path'

/** Where a node keeps its files inside its per-network data directory. */
export interface DataDirLayout {
  root: string
  nodeConfig: string
  database: string
  peerKey: string
  dids: string
  nft: string
  contracts: string
  /** content blocks served and fetched over bitswap (`-kubo`; src/p2p/kubo/blockstore.ts) */
  blocks: string
  temp: string
}

export function dataDirLayout (root: string): DataDirLayout {
  return {
    root,
    nodeConfig: join(root, 'node.json'),
    database: join(root, 'db'),
    peerKey: join(root, 'peer.key'),
    dids: join(root, 'dids'),
    nft: join(root, 'nft'),
    contracts: join(root, 'contracts'),
    blocks: join(root, 'blocks'),
    temp: join(root, 'temp')
  }
}
