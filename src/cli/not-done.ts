import { Flags } from '@oclif/core'
import { BaseCommand } from './base-command.js'
import type { RouteId } from '../api/contract/paths.js'

/** The reference's routes this node answers with status false and the alternative (legacy-api-paths.ts). */
export type NotDoneRoute =
  | 'legacyMigrateNode' | 'legacyLockTokens' | 'legacyCreateDataToken' | 'legacyCommitDataToken' | 'legacySetupDb'
  | 'legacyPublishSmartContract' | 'legacyGetAllExplorer' | 'legacyAddExplorer' | 'legacyRemoveExplorer'
  | 'legacyUnpledgePowUnpledgeTokens' | 'legacyInitiatePinToken' | 'legacyRecoverToken' | 'legacyFaucetTokenCheck'
  | 'legacyValidateToken' | 'legacyAddUserApiKey' | 'legacyCheckPinnedState'

/** A flag of the reference's verb that this node does not use: accepted so its scripts still parse. */
export function acceptedString (what: string) {
  return Flags.string({ description: `${what} (accepted as the reference takes it; not used by this node)`, helpGroup: 'REFERENCE' })
}
export function acceptedBoolean (what: string) {
  return Flags.boolean({ description: `${what} (accepted as the reference takes it; not used by this node)`, helpGroup: 'REFERENCE' })
}

/**
 * A verb of the reference's CLI for an operation this node deliberately does not do. It asks the
 * node's matching `/api` route, so the answer (status false, the alternative in its message) is
 * written once, on the node; the verb logs it as [ERROR] and exits 1.
 */
export abstract class NotDoneCommand extends BaseCommand {
  /** left out of `rbtnode help` (still accepted, for scripts; `help --all` lists it) */
  static override hidden = true
  protected abstract readonly route: NotDoneRoute & RouteId

  async run (): Promise<void> {
    this.finish(await this.client().call(this.route, {}))
  }
}
