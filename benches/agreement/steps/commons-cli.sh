# apache/commons-cli (Java, Maven 3.8.7, JUnit 5 through Surefire): an agent-like loop
# (J1-J11), then 8 real commits replayed (JR1-JR8). Checks: what `itergate init` writes.
# init reads the effective POM, so what commons-parent configures counts: RAT is skipped
# (`-Drat.skip=true`; RAT runs at `validate` and would fail `mvn test` on `.itergate.yml`),
# JaCoCo's report is read beside Surefire's, and checkstyle, PMD and SpotBugs are checks.
# An init that reads only pom.xml wrote a bare `mvn test`; the tests check is then edited
# to the one above, as a newcomer had to (see RESULTS.md).
#
# The base is dcf21655 (April 2026), the last commit on commons-parent 97: 98 runs RAT 0.18
# on Java 17, and 99 on requires Maven 3.9; this machine has Maven 3.8.7.
# What a careful reviewer says about each step is in ../reviewer.tsv.

# `itergate init` (edited only by an init that reads pom.xml alone); both files are kept
# with the outputs.
maven_config() {
    "$ITERGATE" init >&2 || exit 1
    cp .itergate.yml "$OUT/$REPO/itergate-init.yml"
    python3 - <<'PY' || exit 1
import sys
text = open(".itergate.yml").read()
old = """  tests:
    run: mvn -B -ntp test -Dsurefire.printSummary=true
    report:
      format: junit
      path: '**/target/surefire-reports/TEST-*.xml'
"""
new = """  tests:
    run: mvn -B -ntp test -Dsurefire.printSummary=true -Drat.skip=true -Dmaven.test.failure.ignore=true jacoco:report
    report:
    - format: junit
      path: '**/target/surefire-reports/TEST-*.xml'
    - format: jacoco
      path: '**/target/site/jacoco/jacoco.xml'
"""
# init reads the effective POM: RAT skipped and JaCoCo read already (its report goal by
# full coordinates, since a project that adds the plugin in the same commit has no prefix).
import re
if new in text or re.sub(r" org\.jacoco:jacoco-maven-plugin:[0-9.]+:report", " jacoco:report", text).count(new):
    sys.exit(0)
if old not in text:
    sys.exit("maven_config: init's tests check is not the expected one")
open(".itergate.yml", "w").write(text.replace(old, new, 1))
PY
    cp .itergate.yml "$OUT/$REPO/itergate.yml"
    git add .itergate.yml
    git_id commit -q -m "itergate configuration (itergate init; tests: RAT skipped, JaCoCo report)"
}

OPTIONS=src/main/java/org/apache/commons/cli/Options.java
OPTIONS_TEST=src/test/java/org/apache/commons/cli/OptionsTest.java
UTIL=src/main/java/org/apache/commons/cli/Util.java

clone commons-cli "$MIRRORS/apache+commons-cli/repo" dcf21655
maven_config
branch agent

step J1 "stripLeadingAndTrailingQuotes strips quotes around inner quotes too (breaks UtilTest.testStripLeadingAndTrailingQuotes: expected <\"foo\" and \"bar\"> but was <foo\" and \"bar>)"
edit "$UTIL" ' && str.substring(1, length - 1).indexOf('"'"'"'"'"') == -1) {' ') {'
commit
score

step J2 "git revert of J1 (tree equals the base again)"
git_id revert --no-edit HEAD >/dev/null
score

step J3 "add public method Options.isEmpty, no test"
edit "$OPTIONS" '    /**
     * Returns the Options for use by the HelpFormatter.' '    /**
     * Tests whether this set has no options.
     *
     * @return true if no option was added.
     * @since 1.12.0
     */
    public boolean isEmpty() {
        return shortOpts.isEmpty() && longOpts.isEmpty();
    }

    /**
     * Returns the Options for use by the HelpFormatter.'
commit
score

step J4 "add a test for Options.isEmpty"
edit "$OPTIONS_TEST" '        assertTrue(s.toLowerCase().contains("bar"), "bar option missing");
    }
' '        assertTrue(s.toLowerCase().contains("bar"), "bar option missing");
    }

    @Test
    void testIsEmpty() {
        final Options options = new Options();
        assertTrue(options.isEmpty());
        options.addOption("f", "foo", false, "Foo");
        assertFalse(options.isEmpty());
        assertFalse(new Options().addOption(Option.builder().longOpt("bar").build()).isEmpty());
    }
'
commit
score

step J5 "add Options.hasOptions(String...) and its test; its parameter is not final (checkstyle FinalParameters)"
edit "$OPTIONS" '    /**
     * Tests whether the named {@link Option} is a member of this {@link Options}.
     *
     * @param opt short name of the {@link Option}.' '    /**
     * Tests whether every named {@link Option} is a member of this {@link Options}.
     *
     * @param opts short or long names of {@link Option}s.
     * @return true if each named {@link Option} is a member of this {@link Options}.
     * @since 1.12.0
     */
    public boolean hasOptions(String... opts) {
        for (final String opt : opts) {
            if (!hasOption(opt)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Tests whether the named {@link Option} is a member of this {@link Options}.
     *
     * @param opt short name of the {@link Option}.'
edit "$OPTIONS_TEST" '    @Test
    void testIsEmpty() {' '    @Test
    void testHasOptions() {
        final Options options = new Options();
        options.addOption("f", "foo", false, "Foo");
        options.addOption("b", false, "Bar");
        assertTrue(options.hasOptions("f", "--foo", "-b"));
        assertFalse(options.hasOptions("f", "x"));
        assertTrue(options.hasOptions());
    }

    @Test
    void testIsEmpty() {'
commit
score

step J6 "make the parameter final (checkstyle clean)"
edit "$OPTIONS" 'public boolean hasOptions(String... opts)' 'public boolean hasOptions(final String... opts)'
commit
score

step J7 "isEmpty calls countOptions(), which does not exist (javac: cannot find symbol)"
edit "$OPTIONS" '        return shortOpts.isEmpty() && longOpts.isEmpty();' '        return countOptions() == 0;'
commit
score

step J8 "git revert of J7"
git_id revert --no-edit HEAD >/dev/null
score

step J9 "empty commit"
commit --allow-empty
score

# Base debt: the base gets one failing test (OptionGroup.toString separates with "; "),
# then a branch off it changes only a comment, then breaks more tests.
step J10 "base: OptionGroup.toString separates with \"; \" (OptionGroupTest.testToString fails on the base); branch debt: a comment in Options"
to_base
edit src/main/java/org/apache/commons/cli/OptionGroup.java '                buff.append(", ");' '                buff.append("; ");'
base_commit "OptionGroup.toString: separate options with a semicolon"
branch debt
edit "$OPTIONS" '     * Tests whether the named {@link Option} is a member of this {@link Options}.
     *
     * @param opt long name of the {@link Option}.' '     * Tests whether the named long {@link Option} is a member of this {@link Options}.
     *
     * @param opt long name of the {@link Option}.'
commit
score

step J11 "stripLeadingHyphens no longer strips \"--\" as one prefix (breaks UtilTest.testStripLeadingHyphens and long-option parsing tests)"
edit "$UTIL" '        if (str.startsWith(OptionFormatter.DEFAULT_LONG_OPT_PREFIX)) {
            return str.substring(2);
        }
' ''
commit
score

# Real history: 8 consecutive first-parent commits of 2025-11-08 after b65ef1c9 (commons-parent
# 91): small refactors before the 1.11.0 release (forEach, Javadoc, an exception message,
# shared constants, forEachRemaining, fewer returns, no intermediary array), each replayed
# onto the one before it.
clone commons-cli-replay "$MIRRORS/apache+commons-cli/repo" b65ef1c9
maven_config
branch replay
n=0
for rev in 107acd4d c0d10184 395346c5 e852acf5 7199a701 7108379d 4c464592 a9baf80a; do
    n=$((n + 1))
    step JR$n "$rev $(git log -1 --format=%s "$rev")"
    pick "$rev"
    score
    merged
done
