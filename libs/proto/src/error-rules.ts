import type { ClientErrorCodeName, ErrorCodeName } from './error-codes';
import { clientActions, errorCodeRules, statusRules } from './generated/error-rules';

export { clientActions };

/**
 * What a client does on an error: RETRY, BACK_OFF, WAIT_FOR_SHARD, RERUN_STEP,
 * RESEND_PREVIOUS_STEP, FOLLOW_LEADER, REFUSED or FAIL (`clientActions` says what each means).
 */
export type ClientAction = keyof typeof clientActions;

/** A gRPC status's name, as grpc-js's `status` enum spells it (`'UNAVAILABLE'`); OK is none. */
export type StatusName = keyof typeof statusRules;

/** One code's rule: the gRPC status it travels with (null: a CLIENT_* code) and its action. */
export interface ErrorCodeRule<Status extends StatusName | null = StatusName | null> {
  readonly status: Status;
  readonly action: ClientAction;
}

/**
 * Every `ErrorCode`'s rule, from proto/testdata/error_codes.json (generated into
 * `generated/error-rules.ts`): a code of the enum without a rule does not compile.
 */
export const errorCodeRule: {
  readonly [C in ErrorCodeName]: ErrorCodeRule<C extends ClientErrorCodeName ? null : StatusName>;
} = errorCodeRules;

/**
 * The action on an error with gRPC status `status` (its name) and `code`, the
 * `pserver-error-code` trailer as sent (undefined: none came): the code's when it is a code of
 * this contract, whatever the status; otherwise the status's, without a code or with one newer
 * than this client. A status that is not gRPC's is FAIL.
 */
export function actionOf(status: string, code: string | undefined): ClientAction {
  if (code !== undefined && Object.hasOwn(errorCodeRule, code))
    return errorCodeRule[code as ErrorCodeName].action;
  if (!Object.hasOwn(statusRules, status)) return 'FAIL';
  const rule = statusRules[status as StatusName];
  return code === undefined ? rule.withoutCode : rule.unknownCode;
}
