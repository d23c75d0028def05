import { base32 } from 'multiformats/bases/base32'
import type { CID } from 'multiformats/cid'
import type { Bitswap } from '../../p2p/kubo/bitswap.js'
import type { FsBlockstore } from '../../p2p/kubo/blockstore.js'
import { isValidDid } from '../../wallet/did-string.js'
import type { Component, Factory } from '../component/component.js'
import type { IdentityComponent } from '../identity/identity-component.js'

/**
 * Content blocks on Kubo's wire (`-kubo`): the blockstore under the data dir's `blocks/` and
 * bitswap on the host, so Kubo daemons fetch what the node holds and the node fetches what they
 * added (src/p2p/kubo, decisions/0025). A local DID's folder is put into the store the first time
 * a peer asks for it, so `ipfs get <DID>` (how a reference node learns another's DID) works for
 * every DID of the node, old or new. A block no connected peer has is looked for on Kubo's DHTs
 * (`host.kubo`). Off without `-kubo`; the modules load only with it.
 */
export interface KuboBlocksComponent extends Component {
  /** the store and bitswap, once the core started with `-kubo` */
  blocks: () => { store: FsBlockstore, bitswap: Bitswap } | undefined
}

type Needs = { identity: IdentityComponent }

export const kuboBlocksComponent: Factory<Needs, KuboBlocksComponent> = ({ base, identity }) => {
  let store: FsBlockstore | undefined
  let bitswap: Bitswap | undefined

  /** Puts a local DID's folder into the store when `cid` is one (as `ipfs add -r --cid-version 1 --hash sha3-256`). */
  const didFolder = async (cid: CID): Promise<boolean> => {
    const st = store
    if (st === undefined || cid.version !== 1) return false
    const did = cid.toString(base32)
    if (!isValidDid(did) || !await identity.identity.isLocal(did)) return false
    const [{ importFolder }, doc] = await Promise.all([import('../../p2p/kubo/unixfs-import.js'), identity.identity.documentOf(did)])
    const r = await importFolder(st, doc.files, 'v1-sha3')
    if (r.cid.toString(base32) !== did) {
      base.log.warn(`the files of DID ${did} add up to ${r.cid.toString(base32)}, not to the DID: not served`)
      await st.delete(r.cid)
      return false
    }
    return true
  }

  return {
    blocks: () => store !== undefined && bitswap !== undefined ? { store, bitswap } : undefined,
    startNetwork: async ({ host }) => {
      if (!base.options.kubo) return
      const [{ FsBlockstore }, { registerBitswap }] = await Promise.all([import('../../p2p/kubo/blockstore.js'), import('../../p2p/kubo/bitswap.js')])
      store = new FsBlockstore(base.layout.blocks)
      bitswap = await registerBitswap(host, store, { logger: base.log, onMiss: didFolder, ...(host.kubo !== undefined ? { routing: host.kubo } : {}) })
    },
    stopNetwork: async () => {
      const b = bitswap
      bitswap = undefined
      store = undefined
      await b?.stop()
    }
  }
}
