import { expect } from 'chai'
import { secp256k1 } from '@noble/curves/secp256k1.js'
import { bytesToHex } from '@noble/curves/utils.js'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LevelStore } from '../../../src/storage/level-store.js'
import { DidStore } from '../../../src/node/identity/did-store.js'
import { DEFAULT_PASSWORD, IdentityService } from '../../../src/node/identity/identity-service.js'
import { isSealedMnemonic, unsealMnemonic } from '../../../src/wallet/seal.js'
import type { SignAnswer, SignPrompt, SignRequest } from '../../../src/wallet/did-crypto.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'
import { MNEMONIC } from '../../helpers/identity.js'

/** A prompt that checks its answer the way the two-step engine does before handing it over. */
const answering = (password: string): SignPrompt => (async (_req: SignRequest, opts?: { validate?: (a: SignAnswer) => Promise<void> }) => {
  const a = { password }
  await opts?.validate?.(a)
  return a
}) as SignPrompt

async function rejects (p: Promise<unknown>): Promise<RbtError> {
  try { await p } catch (e) { return e as RbtError }
  throw new Error('expected a rejection')
}

/**
 * Registers, in the calling describe, a fresh temp dir and LevelDB store per test; `service()`
 * opens an identity service over them (mnemonic migration finished).
 */
function tempIdentity (): { dir: () => string, service: () => Promise<IdentityService> } {
  let dir: string
  let kv: LevelStore
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rbt-identity-'))
    kv = new LevelStore(join(dir, 'db'))
    await kv.open()
  })
  afterEach(async () => { await kv.close(); rmSync(dir, { recursive: true, force: true }) })
  return {
    dir: () => dir,
    service: async () => {
      const s = new IdentityService({
        store: new DidStore(join(dir, 'dids'), kv), kv, peers: { get: () => undefined, set: async () => {} }, network: () => undefined, peerKeys: () => undefined
      })
      await s.open()
      await s.mnemonicsMigrated
      return s
    }
  }
}

describe('identity service: lite DID mnemonics are sealed', function () {
  this.timeout(30_000)
  const { dir, service } = tempIdentity()
  const mnemonicPath = (did: string): string => join(dir(), 'dids', did, 'mnemonic.txt')
  /** What a data dir from before sealing holds: the words in plaintext. */
  const makePlain = (did: string): void => { writeFileSync(mnemonicPath(did), MNEMONIC) }

  it('a new lite DID keeps its mnemonic sealed with its password; the node reads it only through that password', async () => {
    const id = await service()
    const { did } = await id.create({ type: 4, password: 'Pw-one', mnemonic: MNEMONIC, childPath: 1 })
    const file = readFileSync(mnemonicPath(did))
    expect(file.toString()).to.not.include(MNEMONIC.split(' ')[0]!)
    expect(isSealedMnemonic(file)).to.equal(true)
    expect(await unsealMnemonic(file, 'Pw-one')).to.equal(MNEMONIC)
    expect(await id.mnemonic(did, 'Pw-one')).to.equal(MNEMONIC)
    expect((await rejects(id.mnemonic(did, 'Pw-two'))).code).to.equal(ErrorCode.WRONG_PASSWORD)
  })

  it('an old plaintext mnemonic of a DID with the default password is sealed at start', async () => {
    const first = await service()
    const { did } = await first.create({ type: 4, mnemonic: MNEMONIC, childPath: 2 })
    makePlain(did)
    await service()
    const file = readFileSync(mnemonicPath(did))
    expect(isSealedMnemonic(file)).to.equal(true)
    expect(await unsealMnemonic(file, DEFAULT_PASSWORD)).to.equal(MNEMONIC)
  })

  it('an old plaintext mnemonic under another password is sealed at the first successful unlock, not by a wrong one', async () => {
    const first = await service()
    const { did } = await first.create({ type: 4, password: 'Own-pw', mnemonic: MNEMONIC, childPath: 3 })
    makePlain(did)
    const id = await service()
    // the password is not known at start: the file stays as it was
    expect(readFileSync(mnemonicPath(did)).toString()).to.equal(MNEMONIC)
    expect((await rejects((await id.signerFor(did, answering('not-it'))).pvtSign('ab'.repeat(32)))).code).to.equal(ErrorCode.WRONG_PASSWORD)
    expect(readFileSync(mnemonicPath(did)).toString()).to.equal(MNEMONIC)
    await (await id.signerFor(did, answering('Own-pw'))).pvtSign('ab'.repeat(32))
    const file = readFileSync(mnemonicPath(did))
    expect(isSealedMnemonic(file)).to.equal(true)
    expect(await unsealMnemonic(file, 'Own-pw')).to.equal(MNEMONIC)
  })

  it('reading an old plaintext mnemonic needs the key password too, and seals it', async () => {
    const first = await service()
    const { did } = await first.create({ type: 4, password: 'Own-pw', mnemonic: MNEMONIC, childPath: 4 })
    makePlain(did)
    const id = await service()
    expect((await rejects(id.mnemonic(did, 'guess'))).code).to.equal(ErrorCode.WRONG_PASSWORD)
    expect(await id.mnemonic(did, 'Own-pw')).to.equal(MNEMONIC)
    expect(isSealedMnemonic(readFileSync(mnemonicPath(did)))).to.equal(true)
  })
})

describe('identity service: a lite DID of an external public key', function () {
  this.timeout(30_000)
  const { service } = tempIdentity()

  it('asked again for the same key, answers the DID already here and changes nothing; so does a repeat from the same mnemonic, with its password', async () => {
    const s = await service()
    const key = bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true))
    const first = await s.create({ type: 4, publicKeyHex: key })
    const again = await s.create({ type: 4, publicKeyHex: key })
    expect(again.did).to.equal(first.did)
    expect((await s.list()).filter((d) => d === first.did)).to.have.length(1)
    const fromWords = await s.create({ type: 4, mnemonic: MNEMONIC, childPath: 3, password: 'words-pw' })
    // a script run twice: the same mnemonic, child path and password name the same DID, nothing changes
    const repeat = await s.create({ type: 4, mnemonic: MNEMONIC, childPath: 3, password: 'words-pw' })
    expect(repeat.did).to.equal(fromWords.did)
    expect((await s.list()).filter((d) => d === fromWords.did)).to.have.length(1)
    expect(await s.mnemonic(fromWords.did, 'words-pw')).to.equal(MNEMONIC)
    // another password does not open the key held for it: refused, nothing changes
    const err = await rejects(s.create({ type: 4, mnemonic: MNEMONIC, childPath: 3, password: 'other-pw' }))
    expect(err.code).to.equal(ErrorCode.CONFLICT)
    expect(err.message).to.match(/already exists on this node, and the password given does not open its private key/)
    expect(await s.mnemonic(fromWords.did, 'words-pw')).to.equal(MNEMONIC)
  })
})
