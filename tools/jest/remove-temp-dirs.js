// Jest global teardown: removes the temporary directories tests made (libs/local-cluster's
// tempDir lists them in tmp/temp-dirs/<pid>.txt), for this process (tests run in band) and for
// processes that have ended (its workers). Lists of processes still running belong to another
// Jest run and are left alone.
const fs = require('node:fs');
const path = require('node:path');

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

module.exports = async function removeTempDirs() {
  const lists = path.join(__dirname, '..', '..', 'tmp', 'temp-dirs');
  if (!fs.existsSync(lists)) return;
  for (const file of fs.readdirSync(lists)) {
    const pid = Number(path.basename(file, '.txt'));
    if (pid !== process.pid && alive(pid)) continue;
    const listed = path.join(lists, file);
    for (const dir of fs.readFileSync(listed, 'utf8').split('\n').filter(Boolean))
      fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(listed, { force: true });
  }
};
