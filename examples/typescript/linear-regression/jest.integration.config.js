module.exports = {
  displayName: 'example-linear-regression:integration',
  preset: '../../../jest.preset.js',
  testMatch: ['<rootDir>/test/**/*.integration.spec.ts'],
  testTimeout: 120_000,
};
