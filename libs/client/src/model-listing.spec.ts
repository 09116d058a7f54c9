import { placeTensor, type ParamSpec__Output } from '@pserver/proto';
import { assembleModel } from './model-listing';

const entry = (name: string, elements: number, shape: number[] = []): ParamSpec__Output => ({
  name,
  elementType: 'ELEMENT_TYPE_FLOAT64',
  shape,
  elements,
  optimizer: { sgd: {}, learningRate: { base: 0.5 } } as ParamSpec__Output['optimizer'],
});

describe('assembleModel', () => {
  it('adds up a tensor from its blocks on every shard, in any order, and keeps whole ones', () => {
    const blocks = placeTensor('w', 10, 4, 3).map((b) => entry(b.name, b.end - b.start, [2, 5]));
    const model = assembleModel([blocks[2]!, entry('b', 3), blocks[0]!, blocks[1]!], 4);
    expect(model.get('w')).toEqual({
      elementType: 'ELEMENT_TYPE_FLOAT64',
      shape: [2, 5],
      length: 10,
      optimizer: { sgd: {}, learningRate: { base: 0.5 } },
    });
    expect(model.get('b')).toMatchObject({ length: 3, shape: [] });
    expect([...model.keys()].sort()).toEqual(['b', 'w']);
  });

  it('refuses a listing with a missing block or a short block before the last', () => {
    expect(() => assembleModel([entry('w@0', 4), entry('w@2', 2)], 4)).toThrow(
      /block 1 of 3 is missing/,
    );
    expect(() => assembleModel([entry('w@0', 3), entry('w@1', 2)], 4)).toThrow(
      /block 0 holds 3 elements, the block size is 4/,
    );
    expect(() => assembleModel([entry('w', 4), entry('w@0', 4)], 4)).toThrow(
      /listed whole and as blocks/,
    );
  });
});
