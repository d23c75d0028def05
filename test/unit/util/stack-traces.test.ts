import { expect } from 'chai'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { ROOT } from '../../helpers/cli.js'

/** Runs an ES module script in a fresh process (the formatter is global to a process). */
async function script (text: string, nodeArgs: string[] = []): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [...nodeArgs, '--input-type=module', '-e', text], { cwd: ROOT })
  return stdout
}

// a client call with a route id it does not have fails inside the bundled client (rbt-client.ts)
const FAIL_IN_BUNDLE = `
const { RbtClient } = await import('./dist/bundle/client.js')
try { await new RbtClient({ baseUrl: 'http://127.0.0.1:1' }).call('no such route') } catch (e) { console.log(e.stack) }`

describe('util: stack traces of the bundle', () => {
  it('name the TypeScript file and line a frame of the bundle comes from', async () => {
    const out = await script(`
const { installBundleStackTraces } = await import('./dist/bundle/cli/boot.js')
console.log(installBundleStackTraces(process.cwd() + '/dist/bundle/'))
${FAIL_IN_BUNDLE}`)
    const [installed, header, first] = out.split('\n')
    expect(installed).to.equal('true')
    expect(header).to.match(/^TypeError: /)
    expect(first).to.match(/^ {4}at RbtClient\.envelope \(.*\/src\/client\/rbt-client\.ts:\d+:\d+\)$/)
    // frames outside the bundle stay as V8 writes them
    expect(out).to.match(/at file:\/\/.*\[eval1\]:\d+:\d+/)
  })

  it('without it a frame names the bundle file (what the test above changes)', async () => {
    const out = await script(FAIL_IN_BUNDLE)
    expect(out.split('\n')[1]).to.match(/dist\/bundle\/[^/]+\.js:\d+:\d+\)$/)
  })

  it('installs nothing when Node maps the traces itself (--enable-source-maps)', async () => {
    const out = await script(`
const { installBundleStackTraces } = await import('./dist/bundle/cli/boot.js')
console.log(installBundleStackTraces(process.cwd() + '/dist/bundle/'))
${FAIL_IN_BUNDLE}`, ['--enable-source-maps'])
    expect(out.split('\n')[0]).to.equal('false')
    expect(out).to.match(/src\/client\/rbt-client\.ts:\d+:\d+/)
  })
})
