import { expect } from 'chai'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCommand, type Recorded } from './harness.js'

const A = 'bafybmi' + 'x'.repeat(52)
const B = 'bafybmi' + 'y'.repeat(52)
const T = 'Qm' + 'a'.repeat(44)
const SC = 'Qm' + 's'.repeat(44)
const TX = 'ab'.repeat(32)
const KEY = '02' + 'c'.repeat(64)
const ok = (result: unknown, message = 'ok'): { body: unknown } => ({ body: { status: true, message, result } })
const route = (q: Recorded): string => `${q.method} ${new URL(q.url).pathname}`
const query = (q: Recorded): Record<string, string> => Object.fromEntries(new URL(q.url).searchParams)
const none = (): never => { throw new Error('no request expected') }
const tx = (over: Record<string, unknown> = {}): Record<string, unknown> => ({ transactionID: TX, transaction_type: 'transfer', token_type: 'rbt', sender: A, receiver: B, amount: 1.5, tokens: [T], quorums: [], memo: 'rent', epoch: 100, block_ids: [], status: 'committed', ...over })

describe('cli: verbs of the reference CLI against a stub transport', function () {
  this.timeout(20_000)

  it('setupdid is registerdid under the reference\'s other name', async () => {
    const r = await runCommand(['setupdid', '-did', A, '-privPWD', 'pw'], (q) => route(q) === `POST /svc/v1/dids/${A}/register`
      ? ok({ id: 'op-1', mode: 4, hash: null, only_priv_key: true }, 'Password needed')
      : ok(null, 'DID registered successfully'))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests.map(route)).to.deep.equal([`POST /svc/v1/dids/${A}/register`, 'POST /svc/v1/signature'])
    expect(r.stderr).to.match(/DID registered successfully/)
  })

  it('dump-ft is dumptokenchain under the reference\'s name: -token, every page followed, the blocks written to dump.json', async () => {
    const block = (n: number): Record<string, unknown> => ({ number: n, block_id: `${n}-x`, hash: 'h', type: '01', type_name: 'generated', owner: A, signers: [], tx_id: '', time: '', envelope: '', map: { 2: '01', 98: `h${n}` } })
    const cwd = process.cwd()
    const dir = mkdtempSync(join(tmpdir(), 'rbt-dump-'))
    process.chdir(dir)
    try {
      const r = await runCommand(['dump-ft', '-token', T], (q) => ok({ token_id: T, token_type: 10, kind: 'ft', owner: A, status: 'Free', value: 0.1, length: 2, blocks: [block(query(q).block_id === undefined ? 0 : 1)], next_block_id: query(q).block_id === undefined ? '0-x' : '' }, 'Got the token chain'))
      expect(r.code, r.stderr).to.equal(0)
      expect(r.requests.map(route)).to.deep.equal([`GET /svc/v1/tokens/${T}/chain`, `GET /svc/v1/tokens/${T}/chain`])
      expect(r.requests.map(query)).to.deep.equal([{ maps: 'true' }, { block_id: '0-x', maps: 'true' }])
      expect(r.stdout).to.match(/^token {4}Qm/)
      expect(r.stderr).to.match(/\[INFO\] token chain dumped successfully: 2 block\(s\) written to .*dump\.json/)
      expect(JSON.parse(readFileSync('dump.json', 'utf8'))).to.deep.equal([{ 2: '01', 98: 'h0' }, { 2: '01', 98: 'h1' }])
      const json = await runCommand(['dump-ft', '-token', T, '--json'], () => ok({ token_id: T, token_type: 10, kind: 'ft', owner: A, status: 'Free', value: 0.1, length: 1, blocks: [block(0)], next_block_id: '' }))
      expect(JSON.parse(json.stdout).result.blocks[0], 'the dump map stays out of the printed envelope').to.not.have.property('map')
    } finally { process.chdir(cwd); rmSync(dir, { recursive: true, force: true }) }
  })

  it('gettxndetails asks by -txnID, by -did (both roles when -role is absent, once per transaction) and by -transComment', async () => {
    const byId = await runCommand(['gettxndetails', '-txnID', TX], () => ok(tx(), 'Got the transaction'))
    expect(byId.code, byId.stderr).to.equal(0)
    expect(route(byId.requests[0]!)).to.equal('GET /api/get-by-txnId')
    expect(query(byId.requests[0]!)).to.deep.equal({ txnID: TX })
    expect(byId.stdout.trim()).to.equal(`${TX} transfer rbt ${A} ${B} 1.5 committed 100 "rent"`)

    const self = tx({ transactionID: 'cd'.repeat(32), sender: A, receiver: A, epoch: 50, memo: '' })
    const both = await runCommand(['gettxndetails', '-did', A], (q) => ok(query(q).Role === 'Sender' ? [tx(), self] : [self], 'Got transactions'))
    expect(both.code, both.stderr).to.equal(0)
    expect(both.requests.map((q) => query(q))).to.deep.equal([{ DID: A, Role: 'Sender' }, { DID: A, Role: 'Receiver' }])
    expect(both.stdout.trim().split('\n').map((l) => l.split(' ')[0])).to.deep.equal(['cd'.repeat(32), TX])

    const sender = await runCommand(['gettxndetails', '-did', A, '-role', 'receiver'], () => ok([], 'Got transactions'))
    expect(sender.code, sender.stderr).to.equal(0)
    expect(sender.requests.map((q) => query(q))).to.deep.equal([{ DID: A, Role: 'Receiver' }])

    const byComment = await runCommand(['gettxndetails', '-transComment', 'rent'], () => ok([tx()], 'Got transactions'))
    expect(route(byComment.requests[0]!)).to.equal('GET /api/get-by-comment')
    expect(query(byComment.requests[0]!)).to.deep.equal({ Comment: 'rent' })

    expect((await runCommand(['gettxndetails'], none)).code).to.equal(2)
    expect((await runCommand(['gettxndetails', '-did', A, '-role', 'quorum'], none)).code).to.equal(2)
    expect((await runCommand(['gettxndetails', '-did', 'nope'], none)).code).to.equal(2)
  })

  it('getallnft, get-nfts-by-did and get-ft-info-by-did print one line per item', async () => {
    const all = await runCommand(['getallnft'], () => ok([{ nft_id: T, owner: A, value: 2, status: 'Free', latest_block_id: 'b', parent_nft_id: null }]))
    expect(all.requests.map(route)).to.deep.equal(['GET /svc/v1/nfts'])
    expect(all.stdout.trim()).to.equal(`${T} ${A} 2 Free`)
    const nfts = await runCommand(['get-nfts-by-did', '-did', A], () => ok([{ nft_id: T, value: 2 }]))
    expect(nfts.requests.map(route)).to.deep.equal([`GET /svc/v1/dids/${A}/balances/nft`])
    expect(nfts.stdout.trim()).to.equal(`${T} 2`)
    const fts = await runCommand(['get-ft-info-by-did', '-did', A], () => ok([{ name: 'gold', creator: B, count: 3, value: 0.5 }]))
    expect(fts.requests.map(route)).to.deep.equal([`GET /svc/v1/dids/${A}/balances/ft`])
    expect(fts.stdout.trim()).to.equal(`gold 3 ${B}`)
    expect((await runCommand(['get-ft-info-by-did'], none)).code).to.equal(2)
  })

  it('dump-nft-tokenchain and dumpsmartcontracttokenchain print their chains and write nft.json / dump.json as the reference; getsmartcontractdata and fetchsct use the contract routes', async () => {
    const cwd = process.cwd()
    const dir = mkdtempSync(join(tmpdir(), 'rbt-dump-'))
    process.chdir(dir)
    try {
      const maps = (id: string): { body: unknown } => ok({ token_id: id, token_type: 2, kind: 'nft', owner: A, status: 'Free', value: 1, length: 1, blocks: [{ number: 0, block_id: 'b0', hash: 'h', type: '05', type_name: 'g', owner: A, signers: [], tx_id: '', time: '', envelope: '', map: { 3: A, 98: 'h' } }], next_block_id: '' })
      const nft = await runCommand(['dump-nft-tokenchain', '-nft', T], (q) => new URL(q.url).pathname.startsWith('/svc/v1/tokens/')
        ? maps(T)
        : ok([{ transactionId: TX, initiator: A, owner: A, epoch: 7, data: 'hi', block_id: 'b0', transaction_type: 'deploy', value: 1 }]))
      expect(nft.code, nft.stderr).to.equal(0)
      expect(nft.requests.map(route)).to.deep.equal([`GET /svc/v1/nfts/${T}/chain`, `GET /svc/v1/tokens/${T}/chain`])
      expect(nft.stdout.trim()).to.equal(`b0 deploy ${TX} ${A} ${A} 1 7 "hi"`)
      expect(nft.stderr).to.match(/\[INFO\] NFT token chain dumped successfully: 1 block\(s\) written to .*nft\.json/)
      expect(JSON.parse(readFileSync('nft.json', 'utf8'))).to.deep.equal([{ 3: A, 98: 'h' }])

      const blocks = [
        { transactionId: TX, initiator: A, epoch: 1, data: 'init', block_id: 'b0', transaction_type: 'deploy', state: 's0', output: '', stateHash: '' },
        { transactionId: TX, initiator: B, epoch: 2, data: '{"x":1}', block_id: 'b1', transaction_type: 'execute', state: 's1', output: '', stateHash: '' }
      ]
      const dump = await runCommand(['dumpsmartcontracttokenchain', '-sct', SC], (q) => new URL(q.url).pathname.startsWith('/svc/v1/tokens/') ? maps(SC) : ok(blocks))
      expect(dump.code, dump.stderr).to.equal(0)
      expect(dump.requests.map(route)).to.deep.equal([`GET /svc/v1/smart_contracts/${SC}/chain`, `GET /svc/v1/tokens/${SC}/chain`])
      expect(dump.stdout.trim().split('\n')).to.have.length(2)
      expect(JSON.parse(readFileSync('dump.json', 'utf8'))).to.deep.equal([{ 3: A, 98: 'h' }])
      expect((await runCommand(['dumpsmartcontracttokenchain'], none)).code).to.equal(2)

      const data = await runCommand(['getsmartcontractdata', '-sct', SC], () => ok(blocks))
      expect(data.stdout.trim().split('\n')).to.deep.equal(['0 b0 "init"', '1 b1 "{\\"x\\":1}"'])
      const latest = await runCommand(['getsmartcontractdata', '-sct', SC, '-latest', '--json'], () => ok(blocks))
      expect(JSON.parse(latest.stdout).result).to.deep.equal([{ block_no: 1, block_id: 'b1', data: '{"x":1}' }])
      const fetch = await runCommand(['fetchsct', '-sct', SC], () => ok({ path: '/data/SmartContract/' + SC }))
      expect(route(fetch.requests[0]!)).to.equal('GET /svc/v1/smart_contracts/fetch')
      expect(query(fetch.requests[0]!)).to.deep.equal({ smartContractToken: SC })
      expect(fetch.stdout.trim()).to.equal('/data/SmartContract/' + SC)
    } finally { process.chdir(cwd); rmSync(dir, { recursive: true, force: true }) }
  })

  it('generatefaucetrbt asks the faucet for -numTokens, answers the password request and prints the transaction id', async () => {
    const r = await runCommand(['generatefaucetrbt', '-did', A, '-numTokens', '3', '-privPWD', 'pw'], (q) => route(q) === 'POST /svc/v1/tokens/generate_faucet_test'
      ? ok({ id: 'op-1', mode: 4, hash: null, only_priv_key: true }, 'Password needed')
      : ok({ transactionID: TX, count: 3 }, `Faucet sent 3 test RBT in transaction ${TX}`))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[0]!.body).to.deep.equal({ did: A, token_count: 3 })
    expect(r.requests[1]!.body).to.deep.include({ id: 'op-1', password: 'pw' })
    expect(r.stdout.trim()).to.equal(TX)
    expect((await runCommand(['generatefaucetrbt', '-did', A, '-numTokens', '101'], none)).code).to.equal(2)
  })

  it('createdidfrompubkey sends the hex key of a file, or the flag value itself, as a lite DID\'s public key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rbt-cli-'))
    try {
      const file = join(dir, 'pub.hex')
      writeFileSync(file, KEY.toUpperCase() + '\n')
      for (const value of [file, KEY]) {
        const r = await runCommand(['createdidfrompubkey', '-pubKeyFile', value], () => ok({ did: A, peer_id: null }, 'DID created successfully'))
        expect(r.code, r.stderr).to.equal(0)
        expect(r.requests.map(route)).to.deep.equal(['POST /svc/v1/dids/create'])
        expect(r.requests[0]!.body).to.deep.equal({ type: 4, public_key: KEY })
        expect(r.stdout.trim()).to.equal(A)
      }
      writeFileSync(file, 'not a key')
      const bad = await runCommand(['createdidfrompubkey', '-pubKeyFile', file], none)
      expect(bad.code).to.equal(2)
      expect(bad.stderr).to.match(/does not hold a secp256k1 public key/)
      expect((await runCommand(['createdidfrompubkey', '-pubKeyFile', 'zz'], none)).code).to.equal(2)
    } finally { rmSync(dir, { recursive: true, force: true }) }
  })

  it('a verb the node does not do asks its /api route, logs the answer as [ERROR] and exits 1; the reference\'s own flags parse', async () => {
    const cases: Array<[string[], string]> = [
      [['migratenode', '-didType', '0', '-privPWD', 'x', '-quorumPWD', 'y', '-fp'], 'POST /api/migrate-node'],
      [['locktokens', '-tokenList', 'tokens.txt'], 'POST /api/lock-tokens'],
      [['createdatatoken', '-did', A, '-uid', 'u', '-uinfo', 'i', '-file', 'f.txt', '-fmode'], 'POST /api/create-data-token'],
      [['commitdatatoken', '-did', A, '-bid', 'batchID1'], 'POST /api/commit-data-token'],
      [['setupdb', '-storageType', '1', '-dbName', 'x'], 'POST /api/setup-db'],
      [['publishsct', '-sct', SC, '-did', A, '-pubType', '1', '-sctBlockHash', 'h'], 'POST /api/publish-smart-contract'],
      [['addexplorer', '-links', 'https://a.example,https://b.example'], 'POST /api/add-explorer'],
      [['removeexplorer', '-links', 'https://a.example'], 'POST /api/remove-explorer'],
      [['getallexplorer'], 'GET /api/get-all-explorer'],
      [['unpledge-pow-pledge-tokens'], 'POST /api/unpledge-pow-unpledge-tokens'],
      [['pinToken', '-pinningAddress', B, '-senderAddr', A, '-rbtAmount', '1', '-transType', '2', '-transComment', 'c'], 'POST /api/initiate-pin-token'],
      [['recoverToken', '-pinningAddress', B, '-senderAddr', A, '-rbtAmount', '1'], 'POST /api/recover-token'],
      [['faucettokencheck', '-token', T, '-did', A], 'GET /api/faucet-token-check'],
      [['validatetoken', '-token', T], 'GET /api/validate-token'],
      [['adduserapikey', '-did', A, '-apikey', 'k'], 'POST /api/add-user-api-key'],
      [['checkpinnedstate', '-tokenstatehash', 'h'], 'DELETE /api/check-pinned-state']
    ]
    for (const [argv, expected] of cases) {
      const r = await runCommand(argv, () => ({ body: { status: false, message: `no: ${argv[0]!}`, result: null } }))
      expect(r.code, `${argv[0]!}: ${r.stderr}`).to.equal(1)
      expect(r.requests.map(route), argv[0]).to.deep.equal([expected])
      expect(r.stderr, argv[0]).to.match(new RegExp(`\\[ERROR\\] no: ${argv[0]!}$`, 'm'))
      expect(r.stdout).to.equal('')
    }
  })

  it('every verb accepts the reference\'s global and run flags; run refuses the ones for what this node does otherwise', async () => {
    const r = await runCommand(['getalldid', '-logFile', 'log.txt', '-logLevel', 'debug', '-timeout', '5', '-grpcAddr', 'localhost', '-grpcSecure', '-schemaFile', 's.json', '-didRoot', '-enableAuth', '-arbitaryMode', '-defaultSetup'], () => ok([A], 'Got all DIDs'))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout.trim()).to.equal(A)
    for (const [flag, alternative] of [['-enableAuth', /-apiAuth/], ['-arbitaryMode', /releaseAllLockedTokens/], ['-defaultSetup', /addquorum/]] as const) {
      const run = await runCommand(['run', flag], none)
      expect(run.code, flag).to.equal(2)
      expect(run.stderr, flag).to.match(/\[ERROR\] .* is not supported/).and.to.match(alternative)
    }
  })

  describe('decodetokenchain', () => {
    const cwd = process.cwd()
    let dir: string
    beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'rbt-decode-')); process.chdir(dir) })
    afterEach(() => { process.chdir(cwd); rmSync(dir, { recursive: true, force: true }) })

    it('rewrites dump.json into output.json with the reference\'s key names, asking no node', async () => {
      const dump = [{ 1: 0, 2: 2, 3: A, 5: { 1: A, 2: B, 3: 'c', 4: TX, 6: { [T]: { 1: 0, 4: '1', 5: 'prev' } } }, 10: '1.00000', 98: 'ab', 99: { [A]: 'sig' } }]
      writeFileSync('dump.json', JSON.stringify(dump))
      const r = await runCommand(['decodetokenchain'], none)
      expect(r.code, r.stderr).to.equal(0)
      expect(r.stderr).to.match(/\[INFO\] token chain decoded successfully: 1 block\(s\)/)
      expect(r.stdout.trim()).to.equal(join(dir, 'output.json'))
      const out = JSON.parse(readFileSync('output.json', 'utf8')) as Array<Record<string, unknown>>
      expect(out[0]).to.deep.equal({
        TCTokenTypeKey: 0,
        TCTransTypeKey: 2,
        TCTokenOwnerKey: A,
        TCTransInfoKey: { TISenderDIDKey: A, TIReceiverDIDKey: B, TICommentKey: 'c', TITIDKey: TX, TITokensKey: { [T]: { TTTokenTypeKey: 0, TTBlockNumberKey: '1', TTPreviousBlockIDKey: 'prev' } } },
        TCTokenValueKey: '1.00000',
        TCBlockHashKey: 'ab',
        TCSignatureKey: { [A]: 'sig' }
      })
    })

    it('a missing or malformed dump.json is an [ERROR] and exit 1, and no output.json is written', async () => {
      const missing = await runCommand(['decodetokenchain'], none)
      expect(missing.code).to.equal(1)
      expect(missing.stderr).to.match(/\[ERROR\] cannot read .*dump\.json: no such file/)
      writeFileSync('dump.json', '{"1":0}')
      const notArray = await runCommand(['decodetokenchain'], none)
      expect(notArray.code).to.equal(1)
      expect(notArray.stderr).to.match(/must hold a JSON array/)
      expect(() => readFileSync('output.json')).to.throw()
    })
  })
})
