module.exports = {
  displayName: 'docker:container',
  preset: '../jest.preset.js',
  testMatch: ['<rootDir>/test/**/*.container.spec.ts'],
  testTimeout: 300_000,
};
