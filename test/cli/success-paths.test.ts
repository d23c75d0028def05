import { expect } from 'chai'
import { runCommand, type Recorded } from './harness.js'

const A = 'bafybmi' + 'x'.repeat(52)
const B = 'bafybmi' + 'y'.repeat(52)
const TX = 'ab'.repeat(32)
const route = (q: Recorded): string => `${q.method} ${new URL(q.url).pathname}`

/**
 * The success paths of the verbs no other CLI suite runs to exit 0. The harness fails any verb that
 * exits 0 with an [ERROR] line, so with the other suites every verb's success path is checked.
 */
describe('cli: success paths print no [ERROR]', () => {
  it('transfer-ft: the password step, then the transaction id', async () => {
    const r = await runCommand(['transfer-ft', '-senderAddr', A, '-receiverAddr', B, '-creatorDID', A, '-ftName', 'GOLD', '-ftCount', '3', '-privPWD', 'pw'], (q) => route(q) === 'POST /svc/v1/tx'
      ? { body: { status: true, message: 'Password needed', result: { id: 'op-1', mode: 4, hash: null, only_priv_key: true } } }
      : { body: { status: true, message: `Transaction ${TX} completed successfully`, result: { transactionID: TX, mintedNFTChildren: null } } })
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests.map(route)).to.deep.equal(['POST /svc/v1/tx', 'POST /svc/v1/signature'])
    expect(r.stdout.trim()).to.equal(TX)
    expect(r.stderr).to.match(/\[INFO\] Transaction .* completed successfully/).and.not.match(/\[ERROR\]/)
  })

  it('shutdown: the node\'s answer', async () => {
    const r = await runCommand(['shutdown'], () => ({ body: { status: true, message: 'Shutting down...', result: null } }))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stderr).to.match(/\[INFO\] Shutting down/).and.not.match(/\[ERROR\]/)
  })
})
