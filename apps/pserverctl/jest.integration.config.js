module.exports = {
  displayName: 'pserverctl:integration',
  preset: '../../jest.preset.js',
  testMatch: ['<rootDir>/test/**/*.integration.spec.ts'],
  testTimeout: 60_000,
};
