import { NftFileStore } from '../../token-files/nft/nft-files.js'
import { assetServiceDeps } from '../chain-follower/asset-service-deps.js'
import type { Component, Factory } from '../component/component.js'
import type { ConsensusComponent } from '../consensus/consensus-component.js'
import type { IdentityComponent } from '../identity/identity-component.js'
import type { SigningComponent } from '../signing/signing-component.js'
import type { StorageComponent } from '../storage/storage-component.js'
import type { TokensComponent } from '../tokens/tokens-component.js'
import { errorMessage } from '../../util/errors.js'
import { createNftNetwork, nftRpcHandlers } from './nft-network.js'
import { NftService, type NftNetwork } from './nft-service.js'
import { blockFaultFromEnv } from './artifact-blocks.js'

/** NFTs: files, consensus operations, subscriptions (docs/architecture.md, "NFTs"). */
export interface NftComponent extends Component {
  nfts: NftService
}

type Needs = { storage: StorageComponent, identity: IdentityComponent, signing: SigningComponent, tokens: TokensComponent, consensus: ConsensusComponent }

export const nftComponent: Factory<Needs, NftComponent> = (c) => {
  const log = c.base.log
  let network: NftNetwork | undefined
  const files = new NftFileStore(c.base.layout.nft)
  const blockFault = blockFaultFromEnv()
  if (blockFault !== undefined) log.warn(`test hook: NFT blocks served with faults ${JSON.stringify(blockFault)}`)
  const nfts = new NftService({ ...assetServiceDeps(c, () => network, 'nft-follows', log), files, artifactLimit: c.base.options.nftArtifactLimit, ...(blockFault !== undefined ? { blockFault } : {}) })
  // uploads a crash cut short (partial fetches stay: they resume)
  files.removeLeftovers(Date.now()).then((n) => { if (n > 0) log.info(`removed ${n} unfinished NFT upload(s)`) }).catch(() => {})
  c.consensus.onNftCommitted(async (nftId, blockId, owner, txid) => { nfts.committed(nftId, blockId, owner, txid); return true })
  // an NFT transferred to a DID of this node: its files (artifact block by block) are fetched in the background
  c.consensus.onNftReceived((nftId) => {
    void nfts.fetch(nftId).then((r) => { log.info(`NFT ${nftId} received: ${r.message}`) }, (e: unknown) => { log.warn(`NFT ${nftId} received, its files not fetched yet (GET /svc/v1/fetch-nft retries): ${errorMessage(e)}`) })
  })
  return {
    nfts,
    api: { nfts },
    rpcMethods: () => nftRpcHandlers(() => nfts),
    startNetwork: async ({ host, rpc }) => {
      network = createNftNetwork(host, rpc)
      await nfts.resume().catch((e) => { log.warn(`NFT subscriptions: ${errorMessage(e)}`) })
    }
  }
}
