import '../src/util/polyfill.js'
import { performance } from 'node:perf_hooks'
import { NodeProcess } from '../test/helpers/node-process.js'
import { testPng, walletAnswer, walletMaterial } from '../test/helpers/identity.js'
import { isMain, median, ms } from './stats.js'

/**
 * Identity as the node does it, measured through the HTTP API of a real node process:
 * DID creation per type, arbitrary signing (both steps of the two-step flow) and verification.
 */
export async function run (): Promise<Record<string, string | number>> {
  const node = await new NodeProcess().start()
  const c = node.client
  const wallet = walletMaterial(17)
  const image = testPng(256, 256, 5)
  const upload = async (config: object, files: Record<string, Uint8Array>): Promise<string> => {
    const form = { fields: { did_config: JSON.stringify(config) }, files: Object.fromEntries(Object.entries(files).map(([n, data]) => [n, { filename: n, data }])) }
    const env = await c.call('didCreate', { form })
    return (env.result as { did: string }).did
  }
  const timeN = async (n: number, f: (i: number) => Promise<unknown>): Promise<number[]> => {
    const out: number[] = []
    for (let i = 0; i < n; i++) { const t = performance.now(); await f(i); out.push(performance.now() - t) }
    return out
  }
  try {
    const basic = await timeN(5, async () => await upload({ type: 0 }, { 'image.png': image }))
    const standard = await timeN(5, async () => await upload({ type: 1 }, { 'image.png': image, 'pubKey.pem': wallet.pubKeyPem }))
    const walletTimes: number[] = []
    let walletDid = ''
    for (let i = 0; i < 5; i++) {
      const w = walletMaterial(100 + i)
      const t = performance.now()
      const did = await upload({ type: 2 }, { 'did.png': w.didPng, 'pubShare.png': w.pubSharePng, 'pubKey.pem': w.pubKeyPem })
      walletTimes.push(performance.now() - t)
      if (i === 0) { walletDid = did; Object.assign(wallet, w) }
    }
    const lite = await timeN(10, async () => await c.call('didCreate', { body: { type: 4 } }))
    const basicDid = (await c.call('didList')).result![0]!
    const liteDid = (await c.call('didList')).result!.at(-1)!

    const signOnce = async (did: string, msg: string): Promise<string> => {
      const first = await c.call('signatureArbitrary', { body: { signer_did: did, msg_to_sign: msg } })
      const ch = first.result as { id: string, hash: string | null, only_priv_key: boolean }
      const answer = ch.hash === null ? { password: 'mypassword' } : walletAnswer(wallet, ch.hash, ch.only_priv_key)
      const done = await c.call('signatureComplete', { body: { id: ch.id, ...answer } })
      return (done.result as { signature: string }).signature
    }
    const rate = async (seconds: number, f: (i: number) => Promise<unknown>): Promise<number> => {
      const end = performance.now() + seconds * 1000
      let n = 0
      while (performance.now() < end) await f(n++)
      return n / seconds
    }
    const signBasic = await rate(3, async (i) => await signOnce(basicDid, `m${i}`))
    const signLite = await rate(3, async (i) => await signOnce(liteDid, `m${i}`))
    const signWallet = await rate(2, async (i) => await signOnce(walletDid, `m${i}`))
    const sig = await signOnce(basicDid, 'verify me')
    const liteSig = await signOnce(liteDid, 'verify me')
    const verifyBasic = await rate(2, async () => await c.call('signatureVerify', { query: { signer_did: basicDid, signed_msg: 'verify me', signature: sig } }))
    const verifyLite = await rate(2, async () => await c.call('signatureVerify', { query: { signer_did: liteDid, signed_msg: 'verify me', signature: liteSig } }))
    return {
      'createdid type 0 basic (median of 5)': ms(median(basic)),
      'createdid type 1 standard (median of 5)': ms(median(standard)),
      'createdid type 2 wallet upload (median of 5)': ms(median(walletTimes)),
      'createdid type 4 lite (median of 10)': ms(median(lite)),
      'arbitrary sign, basic (both steps, sequential)': `${signBasic.toFixed(1)} /s`,
      'arbitrary sign, lite (both steps, sequential)': `${signLite.toFixed(1)} /s`,
      'arbitrary sign, wallet (external signature)': `${signWallet.toFixed(1)} /s`,
      'verify, basic DID (HTTP, sequential)': `${verifyBasic.toFixed(0)} /s`,
      'verify, lite DID (HTTP, sequential)': `${verifyLite.toFixed(0)} /s`
    }
  } finally {
    await node.dispose()
  }
}

if (isMain(import.meta.url)) console.log(await run())
