export type { LogSettings } from './options';
export { integerOption, listOption, logOptions, logSettings } from './options';
