export type { Fault, FaultOutcome } from './ledger-faults';
export {
  cutLeadingMasterFromEtcd,
  cutPrimaryFromReplica,
  cutPserver,
  cutTrainerFromShard,
  etcdOutage,
  killLeadingMaster,
  killEveryCopy,
  killPrimaryWhileCatchingUp,
  killReplicaCatchingUp,
  killPserver,
  killReplica,
  latePserver,
  lossyPserver,
  splitEtcd,
  pausePserver,
  slowEtcd,
  pauseTrainersThroughFailover,
  reshapeLive,
  type ReshapeVictim,
  reshapeOffline,
} from './ledger-faults';
export { describeLedgerReport } from './ledger-report';
export type { FaultReport, LedgerReport, LedgerRunOptions, TrainerReport } from './ledger-run';
export { runLedger } from './ledger-run';
export type { RowReader } from './ledger-rows';
export { ledgerRowId, ledgerRowIds, ledgerTable } from './ledger-rows';
export type { LedgerAck, LedgerShape, LedgerStepError, TrainerProgram } from './ledger-trainer';
export { LedgerTrainer, waitForSteps } from './ledger-trainer';
export type { LedgerEntry, LedgerInput, LedgerVerdict, ShardRestore } from './ledger-verdict';
export { describeEntries, judgeLedger } from './ledger-verdict';
export { everyTrainerSteppingAfter } from './recovery-time';
export type { RestoredCheckpoint } from './restored-checkpoint';
export { readRestoredCheckpoint } from './restored-checkpoint';
export type {
  ExitEvent,
  LeadingEvent,
  ServingEvent,
  SupervisedClusterOptions,
} from './supervised-cluster';
export { defaultSupervisedClusterOptions, SupervisedCluster } from './supervised-cluster';
