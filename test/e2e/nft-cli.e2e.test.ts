import { expect } from 'chai'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { USER_PASSWORD, createLiteDid, quorumNetwork, type QuorumNetwork } from '../helpers/quorum-network.js'
import { waitFor } from '../helpers/wait.js'

/** CLI calls wait as long as the node may take for a consensus on a loaded machine. */
const SLOW = { timeoutMs: 240_000 }

describe('e2e: the NFT verbs of the CLI against the quorum network', function () {
  this.timeout(300_000)
  let net: QuorumNetwork
  let dir = ''
  let dave = ''

  before(async () => {
    net = await quorumNetwork()
    dave = await createLiteDid(net.a.client, USER_PASSWORD)
    dir = mkdtempSync(join(tmpdir(), 'rbtnode-nft-cli-'))
    writeFileSync(join(dir, 'meta.json'), JSON.stringify({ name: 'made on the command line' }))
    writeFileSync(join(dir, 'art.bin'), Buffer.from(Array.from({ length: 50_000 }, (_, i) => (i * 7) % 256)))
  })
  after(() => { rmSync(dir, { recursive: true, force: true }) })

  it('create-nft → deploy-nft → execute-nft with data: the chain grows one block per verb; subscribe-nft makes node B follow, fetch-nft copies the files', async () => {
    const { a, b } = net
    const chain = async (port: typeof a, id: string): Promise<Array<{ owner: string, data: string, transaction_type: string }>> =>
      (await port.client.call('nftChain', { params: { nft_id: id } })).result as never

    const made = await runCli(['create-nft', ...a.cliArgs, '-did', dave, '-metadata', join(dir, 'meta.json'), '-artifact', join(dir, 'art.bin')], SLOW)
    expect(made.code, made.stderr).to.equal(0)
    const nftId = made.stdout.trim()
    expect(nftId).to.match(/^Qm[1-9A-HJ-NP-Za-km-z]{44}$/)
    expect(made.stderr).to.include(`[INFO] NFT id ${nftId}`)
    const listed = (await a.client.call('nftsList')).result!.find((n) => n.nft_id === nftId)
    expect(listed).to.deep.include({ owner: dave, status: 'Generated' })

    const deployed = await runCli(['deploy-nft', ...a.cliArgs, '-deployerAddr', dave, '-nft', nftId, '-nftValue', '1', '-nftData', 'cli deploy', '-privPWD', USER_PASSWORD], SLOW)
    expect(deployed.code, deployed.stderr).to.equal(0)
    expect(deployed.stdout.trim()).to.match(/^[0-9a-f]{64}$/)
    expect(deployed.stderr).to.include(`[INFO] NFT ${nftId} deployed by ${dave}`)
    let c = await chain(a, nftId)
    expect(c.map((x) => [x.transaction_type, x.owner, x.data])).to.deep.equal([['09', dave, 'cli deploy']])

    const followed = await runCli(['subscribe-nft', ...b.cliArgs, '-nft', nftId], SLOW)
    expect(followed.code, followed.stderr).to.equal(0)
    expect(followed.stderr).to.include(`[INFO] following NFT ${nftId}`)
    await waitFor(async () => (await b.client.envelope('nftChain', { params: { nft_id: nftId } })).status, { timeoutMs: 60_000, what: 'B to sync the deployed NFT' })

    const executed = await runCli(['execute-nft', ...a.cliArgs, '-executorAddr', dave, '-nft', nftId, '-nftValue', '1', '-nftData', 'cli state 2', '-privPWD', USER_PASSWORD], SLOW)
    expect(executed.code, executed.stderr).to.equal(0)
    const txid = executed.stdout.trim()
    expect(executed.stderr).to.include(`[INFO] NFT ${nftId} executed by ${dave}, transaction ${txid}`)
    c = await chain(a, nftId)
    expect(c.map((x) => [x.transaction_type, x.owner, x.data])).to.deep.equal([['09', dave, 'cli deploy'], ['10', dave, 'cli state 2']])
    await waitFor(async () => (await chain(b, nftId)).length === 2, { timeoutMs: 60_000, what: 'B to see the executed state' })
    expect((await chain(b, nftId))[1].data).to.equal('cli state 2')

    // the reference's dump-nft-tokenchain prints the chain and writes nft.json in the working directory
    const dumped = await runCli(['dump-nft-tokenchain', ...a.cliArgs, '-nft', nftId], { ...SLOW, cwd: dir })
    expect(dumped.code, dumped.stderr).to.equal(0)
    expect(dumped.stdout.trim().split('\n').map((l) => l.split(' ')[1])).to.deep.equal(['09', '10'])
    const nftJson = JSON.parse(readFileSync(join(dir, 'nft.json'), 'utf8')) as Array<Record<string, unknown>>
    expect(nftJson.map((blk) => [blk['2'], blk['3']])).to.deep.equal([['09', dave], ['10', dave]])
    expect(nftJson[1]!['98']).to.match(/^[0-9a-f]{64}$/)
    for (const argv of [['get-nfts-by-did', '-did', dave], ['getallnft']]) {
      const listed = await runCli([argv[0]!, ...a.cliArgs, ...argv.slice(1)], SLOW)
      expect(listed.code, listed.stderr).to.equal(0)
      expect(listed.stdout, argv[0]).to.contain(nftId)
    }

    // fetch-nft on the follower: the very bytes that were uploaded, under the artifact's own name
    const fetched = await runCli(['fetch-nft', ...b.cliArgs, '-nft', nftId], SLOW)
    expect(fetched.code, fetched.stderr).to.equal(0)
    const folder = fetched.stdout.trim()
    expect(readFileSync(join(folder, 'metadata.json')).equals(readFileSync(join(dir, 'meta.json')))).to.equal(true)
    expect(readFileSync(join(folder, 'art.bin')).equals(readFileSync(join(dir, 'art.bin')))).to.equal(true)

    // a DID the node does not host cannot execute it: [ERROR] and exit 1, the chain is unchanged
    const refused = await runCli(['execute-nft', ...a.cliArgs, '-executorAddr', net.bob, '-nft', nftId, '-nftValue', '1', '-nftData', 'not mine', '-privPWD', USER_PASSWORD], SLOW)
    expect(refused.code).to.equal(1)
    expect(refused.stderr).to.match(/\[ERROR\] /)
    expect(await chain(a, nftId)).to.have.length(2)
  })
})
