import { expect } from 'chai'
import { secp256k1 } from '@noble/curves/secp256k1.js'
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT } from '../helpers/cli.js'
import { runCommand } from '../cli/harness.js'
import { NodeProcess } from '../helpers/node-process.js'
import { FIXTURE_ENV } from '../helpers/quorum-network.js'

/**
 * Scripts get run again. Every verb that creates, registers or adds something is called twice with
 * the same input against one real node, as a script run a second time does, and gets the answer of
 * docs/api.md, "Running a script again": the same result again (exit 0), or a clear refusal
 * (exit 1). A success never prints [ERROR] (scripts read any [ERROR] as a failed call).
 */
const PW = 'rerun-password'
const MNEMONIC = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon art'

describe('e2e: every creating verb run twice with the same input (one node)', function () {
  this.timeout(180_000)
  let node: NodeProcess
  let dir = ''
  let did = ''
  let tokenId = ''
  let nftId = ''
  let scId = ''

  /** The verb run in this process (oclif, the real client over HTTP to the node), in the suite's folder. */
  const cli = async (args: string[]): Promise<{ code: number, stdout: string, stderr: string }> => await runCommand([...args, ...node.cliArgs], 'node')
  /** Runs the verb; it must succeed without an [ERROR] line. */
  const succeeds = async (args: string[]): Promise<string> => {
    const r = await cli(args)
    expect(r.code, `${args.join(' ')}\n${r.stderr}`).to.equal(0)
    expect(r.stderr, `${args[0]!}: a success printed [ERROR]`).to.not.match(/\[ERROR\]/)
    return r.stdout.trim()
  }
  /** Runs the verb twice: both succeed; returns both outputs. */
  const twice = async (args: string[]): Promise<[string, string]> => [await succeeds(args), await succeeds(args)]

  const cwd = process.cwd()
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rbtnode-rerun-'))
    // files the verbs read and write (quorum lists, dump.json) stay in the suite's folder
    process.chdir(dir)
    node = await new NodeProcess({ extraArgs: ['-testNet'], env: FIXTURE_ENV }).start()
    did = await succeeds(['createdid', '-didType', '4', '-mnemonic', MNEMONIC, '-childPath', '1', '-privPWD', PW, '-quorumPWD', PW])
    expect(did).to.match(/^bafybmi[a-z2-7]{52}$/)
  })
  after(async () => {
    process.chdir(cwd)
    await node?.dispose()
    if (dir !== '') rmSync(dir, { recursive: true, force: true })
  })

  it('createdid from the same mnemonic and child path: the same DID again; with another password: refused', async () => {
    expect(await succeeds(['createdid', '-didType', '4', '-mnemonic', MNEMONIC, '-childPath', '1', '-privPWD', PW, '-quorumPWD', PW])).to.equal(did)
    expect((await succeeds(['getalldid'])).split('\n')).to.deep.equal([did])
    const other = await cli(['createdid', '-didType', '4', '-mnemonic', MNEMONIC, '-childPath', '1', '-privPWD', 'another-password'])
    expect(other.code).to.equal(1)
    expect(other.stderr).to.match(/\[ERROR\] DID .* already exists on this node, and the password given does not open its private key/)
  })

  it('createdidfrompubkey with the same key: the same DID again', async () => {
    const key = Buffer.from(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)).toString('hex')
    const [a, b] = await twice(['createdidfrompubkey', '-pubKeyFile', key])
    expect(a).to.match(/bafybmi[a-z2-7]{52}/)
    expect(b).to.equal(a)
  })

  it('registerdid again: announced again', async () => {
    await twice(['registerdid', '-did', did, '-privPWD', PW])
  })

  it('generatetestrbt again: new tokens each time (the next free indexes)', async () => {
    const [a, b] = await twice(['generatetestrbt', '-did', did, '-numTokens', '2', '-privPWD', PW])
    const ids = [...a.split('\n'), ...b.split('\n')]
    expect(new Set(ids).size).to.equal(4)
    tokenId = ids[0]!
    expect(await succeeds(['getaccountinfo', '-did', did])).to.match(/RBT \(free\) {3}4\.000/)
    // an explicit start index that clashes: refused
    const clash = await cli(['generatetestrbt', '-did', did, '-numTokens', '1', '-startIndex', '1', '-privPWD', PW])
    expect(clash.code).to.equal(1)
    expect(clash.stderr).to.match(/\[ERROR\] token index 1 was already minted/)
  })

  it('setupquorum again: set up again', async () => {
    await twice(['setupquorum', '-did', did, '-privPWD', PW, '-quorumPWD', PW])
    await succeeds(['checkQuorumStatus', '-quorumAddr', did])
  })

  it('addquorum with the same list: the list once', async () => {
    const list = Array.from({ length: 5 }, (_, i) => 'bafybmi' + String.fromCharCode(97 + i).repeat(52))
    writeFileSync(join(dir, 'quorumlist.json'), JSON.stringify(list.map((address) => ({ type: 2, address }))))
    await twice(['addquorum', '-quorumList', 'quorumlist.json'])
    expect((await succeeds(['getallquorum'])).split('\n').filter((l) => l !== '')).to.have.length(5)
  })

  it('addbootstrap with the same peer: listed once', async () => {
    const peer = '/ip4/127.0.0.1/tcp/9/p2p/12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'
    await twice(['addbootstrap', '-peers', peer])
    expect((await succeeds(['getallbootstrap'])).split('\n').filter((l) => l === peer)).to.have.length(1)
  })

  it('addpeerdetails with the same mapping: kept once', async () => {
    const other = 'bafybmi' + 'z'.repeat(52)
    await twice(['addpeerdetails', '-peerID', '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq', '-did', other, '-didType', '4'])
  })

  it('setupservice with the same database: enabled again', async () => {
    await twice(['setupservice', '-dbType', 'SQLite', '-dbName', 'explorer.sqlite'])
  })

  it('create-nft with the same files: the same NFT id; subscribe-nft again: subscribed', async () => {
    writeFileSync(join(dir, 'meta.json'), JSON.stringify({ name: 'rerun' }))
    writeFileSync(join(dir, 'art.bin'), Buffer.from('the same artifact'))
    const [a, b] = await twice(['create-nft', '-did', did, '-metadata', join(dir, 'meta.json'), '-artifact', join(dir, 'art.bin')])
    expect(a).to.match(/Qm[1-9A-HJ-NP-Za-km-z]{44}/)
    expect(b).to.equal(a)
    nftId = a
    await twice(['subscribe-nft', '-nft', a])
  })

  it('generatesct with the same files: the same contract id; subscribesct again: subscribed', async () => {
    copyFileSync(join(ROOT, 'dist/examples/contracts/counter/counter.wasm'), join(dir, 'counter.wasm'))
    writeFileSync(join(dir, 'lib.rs'), '// the counter contract\n')
    const [a, b] = await twice(['generatesct', '-did', did, '-binCode', join(dir, 'counter.wasm'), '-rawCode', join(dir, 'lib.rs')])
    expect(a).to.match(/Qm[1-9A-HJ-NP-Za-km-z]{44}/)
    expect(b).to.equal(a)
    scId = a
    await twice(['subscribesct', '-sct', a])
  })

  it('create-ft with a name already used: refused with the reason', async () => {
    await succeeds(['create-ft', '-did', did, '-ftName', 'RERUN', '-ftCount', '10', '-rbtAmount', '1', '-privPWD', PW])
    const again = await cli(['create-ft', '-did', did, '-ftName', 'RERUN', '-ftCount', '10', '-rbtAmount', '1', '-privPWD', PW])
    expect(again.code).to.equal(1)
    expect(again.stderr).to.match(/\[ERROR\] FT name "RERUN" is already used by/)
  })

  it('the success path of every other verb a single node serves prints no [ERROR]', async () => {
    expect(tokenId, 'the earlier tests ran').to.not.equal('')
    const peer = (await succeeds(['get-peer-id'])).split('\n').pop()!
    const verbs: string[][] = [
      ['getalldid'], ['getaccountinfo', '-did', did], ['getallquorum'], ['getallbootstrap'], ['node-status'], ['status'],
      ['checkQuorumStatus', '-quorumAddr', did], ['getalltokens', '-did', did], ['dumptokenchain', '-token', tokenId],
      ['decodetokenchain'],
      // the DID holds an NFT and a contract created but not deployed (no chains yet): its RBT chains are what there is to validate
      ['validatetokenchain', '-did', did], ['gettxndetails', '-did', did], ['get-by-node'],
      ['getpledgedtokendetails'], ['run-unpledge'], ['releaseAllLockedTokens'],
      // a self transfer with nothing due, by either verb: success, nothing done
      ['self-transfer-rbt', '-senderAddr', did, '-privPWD', PW], ['transferrbt', '-senderAddr', did, '-receiverAddr', did, '-rbtAmount', '1', '-privPWD', PW],
      ['get-ft-info-by-did', '-did', did], ['getallnft'], ['get-nfts-by-did', '-did', did], ['fetch-nft', '-nft', nftId],
      ['fetchsct', '-sct', scId], ['ping', '-peerID', peer],
      ['removebootstrap', '-peers', '/ip4/127.0.0.1/tcp/9/p2p/12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'], ['removeallbootstrap'], ['removeallquorum']
    ]
    const failed: string[] = []
    for (const v of verbs) {
      const r = await cli(v)
      if (r.code !== 0 || /\[ERROR\]/.test(r.stderr)) failed.push(`${v.join(' ')} → exit ${String(r.code)}\n${r.stderr}`)
    }
    expect(failed, failed.join('\n')).to.deep.equal([])
  })
})
