import { expect } from 'chai'
import { existsSync, mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../../src/api/server/app.js'
import { NftFileStore, manifestText, type NftPart } from '../../src/token-files/nft/nft-files.js'
import { NftService, type NftNetwork } from '../../src/node/nft/nft-service.js'
import { cidV0ForContent, goIndentedJson } from '../../src/tokenchain/token-id.js'
import type { ApiServices } from '../../src/api/server/services.js'
import { unusedConsensus } from './stub-consensus.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'
import { offlineAssetDeps } from './stub-assets.js'

const ALICE = 'bafybmi' + 'a'.repeat(52)

describe('api: NFT routes (bad input)', () => {
  const tokens = new Map<string, unknown>()
  const nftDir = mkdtempSync(join(tmpdir(), 'rbt-nft-'))
  const nfts = new NftService({
    files: new NftFileStore(nftDir),
    ...offlineAssetDeps(tokens, ALICE)
  })
  const services = { ...unusedIdentity(), ...unusedTokens(), ...unusedConsensus(), nfts, node: {} as never, bootstrap: {} as never } as unknown as ApiServices
  const app = createApp(services, { version: 't' })
  const upload = async (parts: Record<string, string | Blob>): Promise<{ status: number, env: { status: boolean, message: string, result: unknown } }> => {
    const form = new FormData()
    for (const [k, v] of Object.entries(parts)) {
      if (typeof v === 'string') form.append(k, v)
      else form.append(k, v, k === 'metadata' ? 'meta.json' : k === 'artifact' ? 'art.bin' : k)
    }
    const res = await app.request('/svc/v1/nfts/generate', { method: 'POST', body: form })
    return { status: res.status, env: await res.json() as never }
  }
  const meta = new Blob([JSON.stringify({ name: 'x' })])
  const art = new Blob([new Uint8Array([1, 2, 3])])

  it('creates a content-addressed id: the same inputs give the same id', async () => {
    const r1 = await upload({ did: ALICE, metadata: meta, artifact: art })
    expect(r1.status, r1.env.message).to.equal(200)
    expect(r1.env.result).to.match(/^Qm[1-9A-HJ-NP-Za-km-z]{44}$/)
    const r2 = await upload({ did: ALICE, metadata: meta, artifact: art })
    expect(r2.env.result).to.equal(r1.env.result)
  })

  it('refuses non-JSON metadata, missing parts, a foreign DID and a non-multipart body', async () => {
    let r = await upload({ did: ALICE, metadata: new Blob(['{oops']), artifact: art })
    expect(r.status).to.equal(400)
    expect(r.env.message).to.match(/not a JSON document/)
    r = await upload({ did: ALICE, metadata: meta })
    expect(r.status).to.equal(400)
    expect(r.env.message).to.match(/artifact/)
    r = await upload({ did: ALICE, artifact: art })
    expect(r.env.message).to.match(/metadata/)
    r = await upload({ did: 'bafybmi' + 'b'.repeat(52), metadata: meta, artifact: art })
    expect(r.status).to.equal(403)
    r = await upload({ did: 'nope', metadata: meta, artifact: art })
    expect(r.env.status).to.equal(false)
    const res = await app.request('/svc/v1/nfts/generate', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })
    expect(res.status).to.equal(400)
  })

  it('refuses an artifact named like one of the NFT\'s own files, in any case; nothing is written', async () => {
    const before = readdirSync(nftDir)
    for (const name of ['manifest.json', 'nft.json', 'metadata.json', 'MANIFEST.JSON', 'Nft.Json', ' metadata.json ', 'manifest.json.']) {
      const r = await upload({ did: ALICE, metadata: meta, artifact: new Blob([name]), artifact_name: name })
      expect([r.status, r.env.status], name).to.deep.equal([400, false])
      expect(r.env.message, name).to.match(/reserved for the NFT's own files/)
    }
    expect(readdirSync(nftDir)).to.deep.equal(before)
    const ok = await upload({ did: ALICE, metadata: meta, artifact: new Blob(['fine']), artifact_name: 'manifest.json.png' })
    expect(ok.status, ok.env.message).to.equal(200)
  })

  it('fetch-nft: a peer whose manifest names a reserved file fails the fetch with a clear error and nothing is written', async () => {
    // a peer's NFT whose every part hashes correctly, but whose artifact is named manifest.json
    const metadata = new TextEncoder().encode('{"name":"m"}')
    const artifact = new TextEncoder().encode('{"Metadata":"x","Artifact":"y","ArtifactName":"evil"}')
    const manifest = new TextEncoder().encode(manifestText({ metadata: cidV0ForContent(metadata), artifact: cidV0ForContent(artifact), artifactName: 'Manifest.json' }))
    const nft = new TextEncoder().encode(goIndentedJson([['DID', ALICE], ['ArtifactHash', cidV0ForContent(manifest)]]))
    const nftId = cidV0ForContent(nft)
    const parts: Record<NftPart, Uint8Array> = { nft, manifest, metadata, artifact }
    const network: NftNetwork = {
      publish: async () => 0,
      follow: () => {},
      fetchChain: async () => [],
      fetchPart: async (_peer, id, part) => { expect(id).to.equal(nftId); return parts[part] },
      blockSource: (peer) => ({ peer, blocks: async function * () {} }),
      provide: async () => {},
      candidates: async () => ['12D3KooWPeerHoldingTheNft']
    }
    const dir = mkdtempSync(join(tmpdir(), 'rbt-nft-fetch-'))
    const fetching = new NftService({ files: new NftFileStore(dir), ...offlineAssetDeps(new Map(), ALICE), network: () => network })
    const fetchApp = createApp({ ...services, nfts: fetching } as unknown as ApiServices, { version: 't' })
    const res = await fetchApp.request(`/svc/v1/fetch-nft?nft=${nftId}`)
    const env = await res.json() as { status: boolean, message: string }
    expect(res.status).to.be.within(400, 499)
    expect(env.status).to.equal(false)
    expect(env.message).to.match(/reserved for the NFT's own files/)
    expect(existsSync(join(dir, nftId))).to.equal(false)
    expect(readdirSync(dir)).to.deep.equal([])
  })

  it('refuses oversize metadata', async () => {
    const r = await upload({ did: ALICE, metadata: new Blob(['"' + 'x'.repeat(300 * 1024) + '"']), artifact: art })
    expect(r.status).to.equal(413)
  })

  it('answers clear errors for unknown or malformed NFT ids', async () => {
    let res = await app.request('/svc/v1/nfts/not-a-cid/chain')
    expect(res.status).to.equal(400)
    res = await app.request('/svc/v1/nfts/QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/chain')
    expect(res.status).to.equal(404)
    res = await app.request('/svc/v1/fetch-nft?nft=QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG')
    expect(res.status).to.equal(503)
    const tx = await app.request('/svc/v1/tx', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ initiator: ALICE, owner: ALICE, tokens: { nft: [{ nftId: 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG', value: 1 }] } }) })
    expect(tx.status).to.equal(404)
    // SPEC: rbt is 0 when no RBT is transferred; it does not count as mixing RBT with the NFT
    for (const rbt of [0, '0', '0.0']) {
      const zero = await app.request('/svc/v1/tx', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ initiator: ALICE, owner: ALICE, tokens: { rbt, nft: [{ nftId: 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG', value: 1 }] } }) })
      expect([zero.status, String(rbt)]).to.deep.equal([404, String(rbt)])
    }
    const mixed = await app.request('/svc/v1/tx', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ initiator: ALICE, owner: ALICE, tokens: { rbt: 0.5, nft: [{ nftId: 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG', value: 1 }] } }) })
    expect(mixed.status).to.equal(400)
    const two = await app.request('/svc/v1/tx', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ initiator: ALICE, owner: ALICE, tokens: { nft: [] , rbt: 1 } }) })
    expect(two.status).to.not.equal(500)
  })
})
