import { expect } from 'chai'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { FIXTURE_ENV, mintRbt, quorumNetwork, rbtBalance, type QuorumNetwork } from '../helpers/quorum-network.js'
import { NodeProcess } from '../helpers/node-process.js'
import { freePort } from '../helpers/ports.js'
import { waitFor } from '../helpers/wait.js'

const TX_PASS = 'legacy-tx-pw'
const Q_PASS = 'legacy-quorum-pw'
/** low difficulty so the proof takes milliseconds; the node accepts nothing weaker */
const POW_LEVEL = '2'

interface Env { data: any, message: string, status: string }

/** A node with the release-2.6 listener on a port of its own. */
class LegacyNode {
  constructor (readonly node: NodeProcess, readonly port: number) {}
  static async start (n: number): Promise<LegacyNode> {
    const port = await freePort()
    const node = await new NodeProcess({ n, extraArgs: ['-testNet', '-legacyPort', String(port)], env: { ...FIXTURE_ENV, RBTNODE_POW_LEVEL: POW_LEVEL } }).start()
    return new LegacyNode(node, port)
  }

  async post (path: string, body: unknown): Promise<{ code: number, env: Env }> {
    const res = await fetch(`http://127.0.0.1:${this.port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return { code: res.status, env: await res.json() as Env }
  }

  get pledgedFile (): string { return join(this.node.dir, 'Rubix', 'TestNet', 'PledgedTokens.json') }
  pledgedView (): Array<{ tokenHash: string, pledger: string, txid: string }> {
    return existsSync(this.pledgedFile) ? JSON.parse(readFileSync(this.pledgedFile, 'utf8')) : []
  }
}

async function pledged (n: NodeProcess, did: string): Promise<number> {
  const env = await n.client.call('didBalancesRbt', { params: { did } })
  return Math.round((env.result as unknown as { pledged: number }).pledged * 1000)
}

describe('e2e: release-2.6 service on its own port and proof-of-work unpledging', function () {
  this.timeout(600_000)
  let net: QuorumNetwork
  let sender: LegacyNode
  let receiver: LegacyNode
  let senderDid = ''
  let receiverDid = ''
  let quorumDid = ''

  before(async () => {
    net = await quorumNetwork()
    ;[sender, receiver] = await Promise.all([LegacyNode.start(40), LegacyNode.start(41)])
    await net.join(sender.node)
    await net.join(receiver.node)
  })

  afterEach(function () {
    if (this.currentTest?.state !== 'failed') return
    const nodes: Array<[string, NodeProcess | undefined]> = [['sender', sender?.node], ['receiver', receiver?.node], ...(net?.all() ?? []).map((n, i): [string, NodeProcess] => [`fixture ${i}`, n])]
    for (const [name, n] of nodes) {
      if (n === undefined || (n.running && !name.startsWith('s') && !name.startsWith('r'))) continue
      console.log(`--- ${name} node (running: ${String(n.running)}) ---\n${n.logs.split('\n').slice(-40).join('\n')}`)
    }
  })

  after(async () => {
    await Promise.all([sender?.node.dispose(), receiver?.node.dispose()])
  })

  it('generates keys, starts the quorum service, transfers through 7 quorums and unpledges with a valid proof', async () => {
    // keys: returnKey 1 hands a key pair back and keeps nothing; returnKey 0 makes the node's DIDs
    const returned = await sender.post('/generateEcDSAKeys', { pvtKeyPass: TX_PASS, returnKey: 1 })
    expect(returned.env.status).to.equal('true')
    expect(returned.env.data.privateKey).to.match(/BEGIN RBT SEALED PRIVATE KEY/)
    expect(JSON.stringify((await sender.node.client.call('didList')).result ?? [])).to.not.include(returned.env.data.did)
    const noKeys = await sender.post('/initiateTransaction', { receiver: net.quorumDids[0], tokenCount: 1, comment: 'x', type: 1, pvtKeyPass: TX_PASS })
    expect(noKeys.code).to.equal(404)
    expect(noKeys.env.message).to.match(/generateEcDSAKeys first/)

    senderDid = (await sender.post('/generateEcDSAKeys', { pvtKeyPass: TX_PASS, returnKey: 0 })).env.data.did
    receiverDid = (await receiver.post('/generateEcDSAKeys', { pvtKeyPass: TX_PASS, returnKey: 0 })).env.data.did
    quorumDid = (await receiver.post('/generateQuorumKeys', { pvtKeyPass: Q_PASS, returnKey: 0 })).env.data.did
    expect(new Set([senderDid, receiverDid, quorumDid]).size).to.equal(3)

    const wrongQ = await receiver.post('/startQuorumService', { pvtKeyPass: 'wrong' })
    expect(wrongQ.code).to.equal(401)
    expect(wrongQ.env.status).to.equal('false')
    const started = await receiver.post('/startQuorumService', { pvtKeyPass: Q_PASS })
    expect(started.env, started.env.message).to.deep.include({ status: 'true' })
    expect((await receiver.node.client.envelope('quorumsStatus', { query: { quorumAddress: quorumDid } })).status).to.equal(true)

    // the legacy quorum stakes RBT to pledge; the sender has 10 RBT
    await mintRbt(receiver.node.client, quorumDid, 10, 0, Q_PASS)
    await mintRbt(sender.node.client, senderDid, 10, 0, TX_PASS)
    // both nodes use 6 quorums of the fixture and the legacy quorum: 7 quorums, 5 signatures
    const quorums = [...net.quorumDids.slice(0, 6), quorumDid]
    for (const n of [sender.node, receiver.node]) {
      await n.client.call('quorumsRemoveAll')
      for (const did of quorums) await n.client.call('quorumsAdd', { body: { did } })
    }
    await sender.node.client.call('nodeAddPeers', { body: { DID: receiverDid, PeerID: receiver.node.peerId, DIDType: 4 } })
    await sender.node.client.call('nodeAddPeers', { body: { DID: quorumDid, PeerID: receiver.node.peerId, DIDType: 4 } })
    await receiver.node.client.call('nodeAddPeers', { body: { DID: senderDid, PeerID: sender.node.peerId, DIDType: 4 } })
    await waitFor(async () => (await sender.node.client.envelope('didResolve', { params: { did: quorumDid } })).status, { timeoutMs: 30_000, what: 'the legacy quorum DID to resolve' })

    // a wrong password changes nothing
    const wrong = await sender.post('/initiateTransaction', { receiver: receiverDid, tokenCount: 1, comment: 'legacy', type: 1, pvtKeyPass: 'wrong' })
    expect(wrong.code).to.equal(401)
    expect(wrong.env.data.response.status).to.equal('Failed')
    expect(await rbtBalance(sender.node.client, senderDid)).to.equal(10)
    const tooMuch = await sender.post('/initiateTransaction', { receiver: receiverDid, tokenCount: 11, comment: 'legacy', type: 1, pvtKeyPass: TX_PASS })
    expect(tooMuch.code).to.equal(422)

    // A wallet's payments are signed by its usual quorums (the anchor and those ranked first by
    // SHA3(sender | DID), docs/protocol.md): with 7 on the list, the legacy quorum may not be among
    // them. A first payment goes through the 7; if the legacy quorum did not sign it, the sender's
    // list becomes the legacy quorum and four of those that signed, so the next one needs it.
    let sent = 0
    let txid = ''
    const pay = async (i: number): Promise<string[]> => {
      const r = await sender.post('/initiateTransaction', { receiver: receiverDid, tokenCount: 0.5, comment: `legacy ${i}`, type: 1, pvtKeyPass: TX_PASS })
      expect(r.code, r.env.message).to.equal(200)
      expect(r.env.status).to.equal('true')
      const resp = r.env.data.response
      expect(resp).to.deep.include({ did: senderDid, receiver: receiverDid, status: 'Success', tokenCount: 0.5 })
      expect(resp.tid).to.match(/^[0-9a-f]{64}$/)
      sent += 500
      const signers = (await sender.node.client.call('txGet', { params: { tx_id: resp.tid } })).result?.quorums ?? []
      expect(signers).to.have.length.of.at.least(5)
      if (signers.includes(quorumDid)) txid = resp.tid
      return signers
    }
    const first = await pay(0)
    if (txid === '') {
      await sender.node.client.call('quorumsRemoveAll')
      for (const did of [quorumDid, ...first.slice(0, 4)]) await sender.node.client.call('quorumsAdd', { body: { did } })
      await pay(1)
    }
    expect(txid, 'the legacy quorum signed one of the transfers').to.not.equal('')
    expect(Math.round(await rbtBalance(sender.node.client, senderDid) * 1000)).to.equal(10000 - sent)
    await waitFor(async () => Math.round(await rbtBalance(receiver.node.client, receiverDid) * 1000) === sent, { timeoutMs: 30_000, what: 'the receiver balance' })

    // the pledged-tokens file shows the quorum's pledge once the commit reached it
    const row = await waitFor(() => receiver.pledgedView().find((r) => r.pledger === quorumDid && r.txid === txid), { timeoutMs: 60_000, what: 'the pledge in PledgedTokens.json' })
    const pledgedBefore = await pledged(receiver.node, quorumDid)
    expect(pledgedBefore).to.be.greaterThan(0)

    const un = await receiver.post('/unpledgeToken', { tokenList: row.tokenHash })
    expect(un.code, un.env.message).to.equal(200)
    expect(un.env.status).to.equal('true')
    expect(un.env.data['Pledge status']).to.equal(true)
    const proof = un.env.data.proofs[0]
    expect(proof).to.deep.include({ token: row.tokenHash, pledger: quorumDid, txid, level: 2 })
    expect(proof.hashes[proof.hashes.length - 1].slice(-2)).to.equal(txid.slice(-2))
    expect(receiver.pledgedView().find((r) => r.tokenHash === row.tokenHash)).to.equal(undefined)
    expect(await pledged(receiver.node, quorumDid)).to.be.lessThan(pledgedBefore)
    // released once only
    expect((await receiver.post('/unpledgeToken', { tokenList: row.tokenHash })).code).to.equal(404)

    // another node verifies the proof; a tampered proof is rejected
    const v = await sender.post('/verifyPoW', { tokenList: row.tokenHash, receiver: quorumDid, transactionID: txid, proof })
    expect(v.env.data['Release status']).to.equal(true)
    const tampered = { ...proof, hashes: [...proof.hashes] }
    tampered.hashes[0] = tampered.hashes[0].replace(/^./, (c: string) => (c === '0' ? '1' : '0'))
    expect((await sender.post('/verifyPoW', { tokenList: row.tokenHash, receiver: quorumDid, transactionID: txid, proof: tampered })).env.data['Release status']).to.equal(false)
    // without a proof in the body, the sender's node fetches the one the pledger's node stored (rpc cs.powProof)
    const fetched = await sender.post('/verifyPoW', { tokenList: row.tokenHash, receiver: quorumDid, transactionID: txid })
    expect(fetched.env, fetched.env.message).to.deep.include({ status: 'true', data: { 'Release status': true } })
    // the quorum's own node checks the proof it stored
    expect((await receiver.post('/verifyPoW', { tokenList: row.tokenHash, receiver: quorumDid, transactionID: txid })).env.data['Release status']).to.equal(true)
  })
})
