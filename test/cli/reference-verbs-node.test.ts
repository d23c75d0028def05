import { expect } from 'chai'
import { secp256k1 } from '@noble/curves/secp256k1.js'
import { bytesToHex } from '@noble/hashes/utils.js'
import { runCommand } from './harness.js'
import { NodeProcess } from '../helpers/node-process.js'
import { NOT_DONE } from '../../src/api/server/routes/legacy/other.routes.js'

/** Each verb the node does not do, and the /api route whose answer it shows. */
const NOT_DONE_VERBS: Array<[string, keyof typeof NOT_DONE]> = [
  ['migratenode', 'legacyMigrateNode'],
  ['locktokens', 'legacyLockTokens'],
  ['createdatatoken', 'legacyCreateDataToken'],
  ['commitdatatoken', 'legacyCommitDataToken'],
  ['setupdb', 'legacySetupDb'],
  ['publishsct', 'legacyPublishSmartContract'],
  ['addexplorer', 'legacyAddExplorer'],
  ['removeexplorer', 'legacyRemoveExplorer'],
  ['getallexplorer', 'legacyGetAllExplorer'],
  ['unpledge-pow-pledge-tokens', 'legacyUnpledgePowUnpledgeTokens'],
  ['pinToken', 'legacyInitiatePinToken'],
  ['recoverToken', 'legacyRecoverToken'],
  ['faucettokencheck', 'legacyFaucetTokenCheck'],
  ['validatetoken', 'legacyValidateToken'],
  ['adduserapikey', 'legacyAddUserApiKey']
]

describe('cli: verbs of the reference CLI against a real node', function () {
  this.timeout(60_000)
  let node: NodeProcess
  before(async () => { node = await new NodeProcess().start() })
  after(async () => { await node?.stop() })

  it('a verb for an operation the node does not do shows the node\'s own answer, naming the alternative, and exits 1', async () => {
    for (const [verb, route] of NOT_DONE_VERBS) {
      const r = await runCommand([verb, ...node.cliArgs], 'node')
      expect(r.code, `${verb}: ${r.stderr}`).to.equal(1)
      expect(r.stderr.trim(), verb).to.match(/\[ERROR\] /)
      expect(r.stderr.trim().replace(/^.*?\[ERROR\] /, ''), verb).to.equal(NOT_DONE[route])
    }
    const pinned = await runCommand(['checkpinnedstate', ...node.cliArgs, '-tokenstatehash', 'Qm1'], 'node')
    expect(pinned.code).to.equal(1)
    expect(pinned.stderr).to.match(/\[ERROR\] check-pinned-state is not done by this node/)
  })

  it('createdidfrompubkey creates the lite DID of a key; lists and history of that DID answer empty', async () => {
    const key = bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true))
    const r = await runCommand(['createdidfrompubkey', ...node.cliArgs, '-pubKeyFile', key], 'node')
    expect(r.code, r.stderr).to.equal(0)
    const did = r.stdout.trim()
    expect(did).to.match(/^bafybmi[a-z2-7]{52}$/)
    expect(r.stderr).to.match(new RegExp(`\\[INFO\\] DID ${did} created successfully`))
    for (const argv of [['get-ft-info-by-did', '-did', did], ['get-nfts-by-did', '-did', did], ['getallnft'], ['gettxndetails', '-did', did]]) {
      const list = await runCommand([argv[0]!, ...node.cliArgs, ...argv.slice(1)], 'node')
      expect(list.code, `${argv[0]!}: ${list.stderr}`).to.equal(0)
      expect(list.stdout, argv[0]).to.equal('')
    }
  })
})
