import { z } from 'zod'
import { ok } from '../../../contract/envelope.js'
import { normalizeKeys } from '../../../contract/normalize-keys.js'
import { didCreateBody, didString } from '../../../contract/schemas.js'
import type { Context } from 'hono'
import type { ApiServices, DidCreateInput, DidSetupInput } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'
import { isMultipart, parseUpload, type UploadLimits } from '../../multipart.js'

/** Files a DID upload may carry, by canonical name. */
export const DID_UPLOAD_FILES = ['image.png', 'did.png', 'pubShare.png', 'pvtShare.png', 'pubKey.pem', 'pvtKey.pem', 'quorumPubKey.pem', 'quorumPrivKey.pem'] as const
export const DID_UPLOAD_LIMITS: UploadLimits = { maxBytes: 8 * 1024 * 1024, maxFileBytes: 4 * 1024 * 1024 }

const passwordAliases = z.object({
  priv_pwd: z.string().max(1024).optional(),
  quorum_pwd: z.string().max(1024).optional()
})
const createConfig = didCreateBody.extend(passwordAliases.shape)
const setupConfig = z.object({
  type: z.number().int().min(0).max(4),
  password: z.string().max(1024).optional(),
  quorum_password: z.string().max(1024).optional()
}).extend(passwordAliases.shape)

function zodFail (e: z.ZodError, where: string): RbtError {
  const i = e.issues[0]
  const path = i !== undefined && i.path.length > 0 ? i.path.join('.') : where
  return new RbtError(ErrorCode.INVALID_INPUT, `Invalid input: ${where} ${path === where ? '' : path + ': '}${i?.message ?? 'is invalid'}`.replace(/\s+/g, ' ').trim())
}

function parseConfig<S extends z.ZodType> (text: string | undefined, schema: S): z.output<S> {
  if (text === undefined || text.trim() === '') throw new RbtError(ErrorCode.INVALID_INPUT, 'Invalid input: did_config is required')
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    throw new RbtError(ErrorCode.INVALID_INPUT, 'failed to parse did configuration')
  }
  // the reference CLI sends numbers as numbers; accept numeric strings too
  if (raw !== null && typeof raw === 'object') {
    for (const k of Object.keys(raw)) {
      const v = (raw as Record<string, unknown>)[k]
      if (/^(type|childpath)$/i.test(k) && typeof v === 'string' && /^\d+$/.test(v)) (raw as Record<string, unknown>)[k] = Number(v)
    }
  }
  const parsed = schema.safeParse(normalizeKeys(raw, schema))
  if (!parsed.success) throw zodFail(parsed.error, 'did_config')
  return parsed.data
}

function checkDid (did: string | undefined): string {
  if (!didString.safeParse(did).success) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
  return did as string
}

/** The creation input of a request: the multipart form (did_config plus files) or the JSON body. */
export async function didCreateInput (c: Context, body: z.output<typeof didCreateBody> | undefined): Promise<DidCreateInput> {
  if (!isMultipart(c)) return { ...body }
  const up = await parseUpload(c, DID_UPLOAD_FILES, DID_UPLOAD_LIMITS)
  const cfg = parseConfig(up.fields.did_config, createConfig)
  const { priv_pwd: privPwd, quorum_pwd: quorumPwd, ...rest } = cfg
  const input: DidCreateInput = { ...rest, files: up.files }
  if (input.password === undefined && privPwd !== undefined) input.password = privPwd
  if (input.quorum_password === undefined && quorumPwd !== undefined) input.quorum_password = quorumPwd
  return input
}

/** The setup input of a multipart request (did_config plus the DID's files). */
export async function didSetupInput (c: Context): Promise<DidSetupInput> {
  const up = await parseUpload(c, DID_UPLOAD_FILES, DID_UPLOAD_LIMITS)
  const cfg = parseConfig(up.fields.did_config, setupConfig)
  const password = cfg.password ?? cfg.priv_pwd
  const quorumPassword = cfg.quorum_password ?? cfg.quorum_pwd
  return {
    type: cfg.type,
    files: up.files,
    ...(password !== undefined ? { password } : {}),
    ...(quorumPassword !== undefined ? { quorum_password: quorumPassword } : {})
  }
}

export function didRoutes (r: Registrar, s: ApiServices): void {
  r.on('didCreate', async ({ body, c }) => ok('DID created successfully', await s.identity.create(await didCreateInput(c, body))))
  r.on('didList', async () => ok('Got all DIDs', await s.identity.list()))
  r.on('didSetup', async ({ c }) => ok('DID setup successfully', await s.identity.setup(await didSetupInput(c))))
  r.on('didRegister', async ({ params }) => await s.identity.register(checkDid(params.did)))
  r.on('didPublicKey', async ({ params }) => ok('Got public key successfully', await s.identity.publicInfo(checkDid(params.did))))
  r.on('didResolve', async ({ params }) => ok('DID resolved', await s.identity.resolve(checkDid(params.did))))
}

export function signatureRoutes (r: Registrar, s: ApiServices): void {
  const complete = async (body: { id: string, password?: string | undefined, signature?: string | { Pixels?: string | undefined, Signature?: string | undefined } | undefined, pixels?: string | undefined, cancel?: boolean | undefined }): Promise<Awaited<ReturnType<ApiServices['signing']['complete']>>> => {
    if (body.cancel === true) {
      await s.signing.cancel(body.id)
      return ok(`Request ${body.id} cancelled`, null)
    }
    const answer: { password?: string, signature?: string, pixels?: string } = {}
    if (body.password !== undefined) answer.password = body.password
    if (typeof body.signature === 'string') answer.signature = body.signature
    else if (body.signature !== undefined) {
      if (body.signature.Signature !== undefined) answer.signature = body.signature.Signature
      if (body.signature.Pixels !== undefined) answer.pixels = body.signature.Pixels
    }
    if (body.pixels !== undefined) answer.pixels = body.pixels
    return s.signing.complete(body.id, answer)
  }
  r.on('signatureComplete', async ({ body }) => await complete(body))
  r.on('legacySignatureResponse', async ({ body }) => await complete(body))
  r.on('signatureArbitrary', async ({ body }) => await s.identity.signArbitrary(body.signer_did, body.msg_to_sign))
  r.on('signatureVerify', async ({ query }) => {
    const good = await s.identity.verifyArbitrary(query.signer_did, query.signed_msg, query.signature)
    return good
      ? ok('verification passed, signature is valid', null)
      : { status: false, message: 'verification failed, signature is invalid', result: null }
  })
}
