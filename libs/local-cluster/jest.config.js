module.exports = {
  displayName: 'local-cluster',
  preset: '../../jest.preset.js',
  testMatch: ['<rootDir>/src/**/*.spec.ts'],
};
