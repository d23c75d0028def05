import { randomBytes } from 'node:crypto'
import { bytesToHex } from '../../tokenchain/hash.js'
import type { NodeConfigStore } from '../../storage/node-config-store.js'
import type { TokenService } from '../../tokens/index.js'
import { DidType } from '../../wallet/did-document.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import type { IdentityService } from '../identity/identity-service.js'
import type { ConsensusService } from './consensus-service.js'
import type { QuorumRegistry } from './quorum-registry.js'

/** `nextIndex` was written by earlier versions; mints now take the DID's next free index from the ledger. */
interface FaucetState { did: string, sealed: string, nextIndex?: number }

/**
 * The test network's faucet (a node started with -faucet on a test network). It owns one lite DID,
 * mints test RBT to it on demand and transfers them to the asker through normal consensus.
 * Other nodes find it through the DHT record /rbt/faucet/<network> it publishes at start
 * (docs/protocol.md, "Faucet").
 */
export class Faucet {
  private queue: Promise<unknown> = Promise.resolve()

  constructor (private readonly d: {
    identity: IdentityService
    tokens: TokenService
    registry: QuorumRegistry
    config: NodeConfigStore
    consensus: () => ConsensusService
    log: Logger
  }) {}

  private async state (): Promise<{ did: string, password: string }> {
    const cur = this.d.config.data.settings.faucet as FaucetState | undefined
    if (cur !== undefined) return { did: cur.did, password: this.d.registry.unsealText('faucet', cur.sealed) }
    const password = randomBytes(24).toString('hex')
    const { did } = await this.d.identity.create({ type: DidType.LITE, password })
    const st: FaucetState = { did, sealed: this.d.registry.sealText('faucet', password) }
    await this.d.config.update((c) => { c.settings.faucet = st })
    this.d.log.info(`faucet DID ${did} created`)
    return { did, password }
  }

  async did (): Promise<string> { return (await this.state()).did }

  /** Mints `count` test RBT to the faucet DID and sends them to `did`; one request at a time. */
  async serve (did: string, count: number): Promise<{ txid: string, count: number }> {
    const run = this.queue.then(async () => await this.serveNow(did, count))
    this.queue = run.catch(() => {})
    return await run
  }

  private async serveNow (did: string, count: number): Promise<{ txid: string, count: number }> {
    const st = await this.state()
    if (did === st.did) throw new RbtError(ErrorCode.INVALID_INPUT, 'the faucet does not pay itself')
    const prompt = async (): Promise<{ password: string }> => ({ password: st.password })
    const signer = await this.d.identity.signerFor(st.did, prompt)
    // numbered from the faucet DID's next free index (kept by the ledger, so a crash between mint and transfer loses nothing)
    await this.d.tokens.mintLocalRbt({ did: st.did, count }, { did: st.did, sign: async (h) => bytesToHex(await signer.pvtSign(h)) })
    const svc = this.d.consensus()
    const r = await svc.transfer({ initiator: st.did, owner: did, amountMilli: count * 1000, memo: `faucet: ${count} test RBT` }, prompt)
    return { txid: r.txid, count }
  }
}
