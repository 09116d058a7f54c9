module.exports = {
  displayName: 'demo:integration',
  preset: '../../jest.preset.js',
  testMatch: ['<rootDir>/test/**/*.integration.spec.ts'],
  testTimeout: 600_000,
};
