module.exports = {
  displayName: 'docker:integration',
  preset: '../jest.preset.js',
  testMatch: ['<rootDir>/test/**/*.integration.spec.ts'],
  testTimeout: 180_000,
};
