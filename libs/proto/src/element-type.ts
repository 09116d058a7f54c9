import type { ElementType } from './generated';

export type ElementTypeName = Exclude<keyof typeof ElementType, 'ELEMENT_TYPE_UNSPECIFIED'>;

/** Bytes per element of each element type. */
export const elementSizes: Readonly<Record<ElementTypeName, number>> = {
  ELEMENT_TYPE_INT32: 4,
  ELEMENT_TYPE_UINT32: 4,
  ELEMENT_TYPE_INT64: 8,
  ELEMENT_TYPE_UINT64: 8,
  ELEMENT_TYPE_FLOAT32: 4,
  ELEMENT_TYPE_FLOAT64: 8,
  ELEMENT_TYPE_FLOAT16: 2,
  ELEMENT_TYPE_BFLOAT16: 2,
};

/** Whether `value` names an element type other than UNSPECIFIED. */
export function isElementTypeName(value: unknown): value is ElementTypeName {
  return typeof value === 'string' && Object.hasOwn(elementSizes, value);
}
