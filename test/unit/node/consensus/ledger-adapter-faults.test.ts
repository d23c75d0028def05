import { expect } from 'chai'
import { join } from 'node:path'
import { consensusLedger } from '../../../../src/node/consensus/ledger-adapter.js'
import { LevelStore } from '../../../../src/storage/level-store.js'
import { TokenLedger, auditLedger } from '../../../../src/storage/token-ledger.js'
import { levelTokenRepositories } from '../../../../src/storage/token-repositories.js'
import { decodeBlockEnvelope, formatBlockId, sha3Hex } from '../../../../src/tokenchain/index.js'
import { ErrorCode, RbtError } from '../../../../src/util/errors.js'
import { KeyRing, buildTestTokenChain } from '../../tokenchain/fixtures.js'
import { Tmpfs, requireTmpfs } from '../../../helpers/tmpfs.js'
import { waitFor } from '../../../helpers/wait.js'

type Role = 'receiver' | 'quorum'

/**
 * The commits a transfer makes on the receiver (the token, its chain, the transaction) and on a
 * quorum (the block it signed, the transaction, its vote), through the consensus ledger over
 * LevelDB on a real disk that fills up: none acknowledged may be missing after a restart.
 */
describe('node: consensus commits on a full disk', function () {
  this.timeout(120_000)
  let fs: Tmpfs
  let store: LevelStore
  const ring = new KeyRing()
  const db = (): string => join(fs.dir, 'db')
  const open = async (): Promise<ReturnType<typeof consensusLedger>> => {
    store = new LevelStore(db(), { probeMinMs: 20, probeMaxMs: 200, probeBytes: 1 << 16 })
    await store.open()
    return consensusLedger(store, new TokenLedger(store, sha3Hex), levelTokenRepositories(store))
  }

  before(function () { requireTmpfs(this) })
  beforeEach(() => { fs = Tmpfs.mount(6) })
  afterEach(async () => { await store?.close(); fs?.dispose() })

  /** One commit of `role` for a fresh chain; returns its transaction id. */
  async function commitOne (ledger: ReturnType<typeof consensusLedger>, role: Role): Promise<string> {
    const chain = buildTestTokenChain(ring, 1, 5)
    const last = decodeBlockEnvelope(chain.envelopes[1]!)
    const txid = last.content.transInfo.tid!
    await ledger.commit((w) => {
      const tx = { txid, tokenType: 'rbt' as const, sender: chain.owners[0]!, receiver: chain.owners[1]!, amountMilli: 1000, tokens: [chain.tokenId], quorums: chain.quorums, memo: 'disk', epoch: 1, role, status: 'committed' as const }
      if (role === 'receiver') {
        chain.envelopes.forEach((e, i) => { w.putBlock(chain.tokenId, i, e) })
        w.putToken({ tokenId: chain.tokenId, tokenType: 2, valueMilli: 1000, owner: chain.owners[1]!, status: 'Free', latestBlockId: formatBlockId(1, last.hash), txid, updatedAt: Date.now() })
        w.putTransaction(tx)
      } else {
        w.putBlock(chain.tokenId, 1, chain.envelopes[1]!)
        w.putTransaction(tx)
        w.putRecord('cs-votes', `${chain.quorums[0]!}/${txid}`, { txid, vote: 'yes', at: Date.now() })
      }
    })
    return txid
  }

  for (const role of ['receiver', 'quorum'] as const) {
    it(`a ${role}'s commits: refused with INSUFFICIENT_STORAGE once the disk is full, taken again once freed, none acknowledged lost at a restart`, async () => {
      const ledger = await open()
      const acked: string[] = []
      for (let i = 0; i < 3; i++) acked.push(await commitOne(ledger, role))
      fs.fill()
      let refusal: unknown
      for (let i = 0; i < 200 && refusal === undefined; i++) {
        try { acked.push(await commitOne(ledger, role)) } catch (e) { refusal = e }
      }
      expect(refusal).to.be.instanceOf(RbtError)
      expect((refusal as RbtError).code).to.equal(ErrorCode.INSUFFICIENT_STORAGE)
      fs.free()
      await waitFor(async () => {
        try { acked.push(await commitOne(ledger, role)); return true } catch (e) { if (!(e instanceof RbtError)) throw e; return false }
      }, { what: 'commits taken again', timeoutMs: 20_000 })
      for (let i = 0; i < 3; i++) acked.push(await commitOne(ledger, role))

      await store.close()
      await open()
      const missing: string[] = []
      const txs = store.collection('txs')
      for (const txid of acked) if (await txs.get(txid) === undefined) missing.push(txid)
      expect(missing, `${missing.length} of ${acked.length} acknowledged commits lost at the restart`).to.deep.equal([])
      expect((await auditLedger(store)).problems).to.deep.equal([])
    })
  }
})
