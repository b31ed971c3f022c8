/**
 * A Jest reporter beside the default one: at the end of a run it names every test file
 * with skipped tests and the first skipped test's full name, which says what it needs
 * (`… (needs DATABASE_URL)`), so "N skipped" in the summary is never a mystery.
 */
class SkippedReporter {
  onRunComplete(_contexts, results) {
    const lines = [];
    for (const file of results.testResults) {
      const skipped = file.testResults.filter((t) => t.status === 'pending' || t.status === 'skipped' || t.status === 'todo');
      if (skipped.length === 0) continue;
      const path = file.testFilePath.replace(`${process.cwd()}/`, '');
      lines.push(`  ${path}: ${skipped.length} skipped, e.g. "${skipped[0].fullName}"`);
    }
    if (lines.length > 0) process.stderr.write(`\nSkipped on this backend (each names what it needs):\n${lines.join('\n')}\n`);
  }
}

module.exports = SkippedReporter;
