import { expect } from 'chai'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext } from 'playwright-core'
import { NodeProcess } from '../helpers/node-process.js'

/** Debian's package (`apt-get install chromium`; .ci/run installs it). */
const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

/**
 * The API reference page in a real browser against a real node: Swagger UI loads from the node's
 * own files under its Content-Security-Policy, lists every operation of the OpenAPI document, and
 * its "Try it out" calls pass the node's guard (the page is the node's own origin).
 */
describe('e2e: API reference page in headless Chromium', function () {
  this.timeout(180_000)
  let node: NodeProcess | undefined
  let context: BrowserContext | undefined
  let profile: string | undefined

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      const reason = `${CHROMIUM} is missing (Debian: apt-get install chromium)`
      if (process.env.CI !== undefined && process.env.CI !== '') throw new Error(`this suite must run on CI, but ${reason}`)
      console.log(`      SKIPPED docs page browser test: ${reason}`)
      this.skip()
    }
    node = await new NodeProcess({ startTimeoutMs: 60_000 }).start()
    profile = mkdtempSync(join(tmpdir(), 'rbtnode-chromium-'))
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true })
  })

  after(async () => {
    await context?.close().catch(() => {})
    await node?.dispose()
    if (profile !== undefined) rmSync(profile, { recursive: true, force: true })
  })

  it('renders every operation of the OpenAPI document from local files only, with no CSP violation', async () => {
    const started = Date.now()
    const page = await context!.newPage()
    const problems: string[] = []
    const requests: string[] = []
    page.on('console', (m) => { if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(`console ${m.type()}: ${m.text()}`) })
    page.on('pageerror', (e) => { problems.push(`page error: ${e.message}`) })
    page.on('request', (r) => { requests.push(r.url()) })

    const res = await page.goto(`${node!.url}/svc/v1/docs`)
    expect(res?.status()).to.equal(200)
    expect(await res?.headerValue('content-security-policy')).to.match(/^default-src 'self'/)

    const doc = await (await fetch(`${node!.url}/svc/v1/openapi.json`)).json() as { paths: Record<string, Record<string, unknown>> }
    const operations = Object.values(doc.paths).reduce((n, p) => n + Object.keys(p).length, 0)
    expect(operations).to.be.greaterThan(20)

    await page.locator('.opblock').first().waitFor({ timeout: 60_000 })
    expect(await page.locator('.info .title').innerText()).to.match(/rbtnode API/)
    // Swagger UI renders the tag sections near the viewport only: scroll through the page and
    // collect every operation it shows (method and path)
    const seen = new Set<string>()
    const collect = async (): Promise<void> => {
      const found = await page.locator('.opblock').evaluateAll((els) => els.map((e) => `${/opblock-(get|post|delete)/.exec(e.className)?.[1] ?? '?'} ${e.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? ''}`))
      for (const f of found) seen.add(f)
    }
    for (let i = 0; i < 400 && seen.size < operations; i++) {
      await collect()
      await page.mouse.wheel(0, 400)
      await page.waitForTimeout(50)
    }
    await collect()
    expect(seen.size, 'operations rendered while scrolling through the page').to.equal(operations)
    expect([...seen]).to.include.members(['get /svc/v1/node/status', 'get /svc/v1/openapi.json', 'post /svc/v1/tx'])

    // "Try it out" on GET /svc/v1/node/status: the page's own call passes the guard
    await page.evaluate(() => { window.scrollTo(0, 0) })
    const statusPath = page.locator('[data-path="/svc/v1/node/status"]')
    for (let i = 0; i < 400 && await statusPath.count() === 0; i++) {
      await page.mouse.wheel(0, 400)
      await page.waitForTimeout(50)
    }
    await statusPath.first().scrollIntoViewIfNeeded()
    const op = page.locator('.opblock-get', { has: statusPath })
    await op.locator('.opblock-summary-control').click()
    await op.locator('button.try-out__btn').click()
    await op.locator('button.execute').click()
    const status = op.locator('.live-responses-table tbody .response-col_status').first()
    await status.waitFor({ timeout: 15_000 })
    expect((await status.innerText()).trim()).to.equal('200')
    expect(await op.locator('.live-responses-table .microlight').first().innerText()).to.match(/"core_started": true/)

    const origin = new URL(node!.url).origin
    expect(requests.filter((u) => new URL(u).origin !== origin), 'requests to other origins').to.deep.equal([])
    expect(requests).to.include(`${origin}/svc/v1/docs/assets/swagger-ui-bundle.js`)
    expect(requests).to.include(`${origin}/svc/v1/openapi.json`)
    expect(problems).to.deep.equal([])
    console.log(`      page loaded, ${operations} operations rendered and one tried in ${Date.now() - started} ms`)
    await page.close()
  })
})
