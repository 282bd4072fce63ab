package io.retrybudget.buildchecks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What the dump holds, and that a removal or a change shows as missing from the newer dump. */
class ApiDumpTest {
  private static final Path FIXTURE = Path.of("target/test-classes/io/retrybudget/buildchecks/fixture");

  @Test
  void theDumpHoldsWhatAUserCanReachAndNothingElse() {
    assertEquals("""
        public class io.retrybudget.buildchecks.fixture.Widget implements java.util.function.Supplier {
          protected <init>()
          protected long count
          protected void grow(long)
          public <init>(int)
          public java.lang.Runnable anonymous()
          public java.lang.String get()
          public static final int LIMIT
        }

        public static final class io.retrybudget.buildchecks.fixture.Widget$Builder {
          public <init>()
          public io.retrybudget.buildchecks.fixture.Widget build()
        }

        """, ApiDump.dump(FIXTURE));
  }

  @Test
  void nonApiPackages() {
    assertEquals(false, ApiDump.isApiPackage("io.retrybudget.budget.internal"));
    assertEquals(false, ApiDump.isApiPackage("io.retrybudget.internal.util"));
    assertEquals(false, ApiDump.isApiPackage("io.retrybudget.budget.redis.transport"));
    assertEquals(false, ApiDump.isApiPackage("io.retrybudget.budget.redis.protocol.v2"));
    assertEquals(true, ApiDump.isApiPackage("io.retrybudget.budget.redis"));
    assertEquals(true, ApiDump.isApiPackage("io.retrybudget.budget.redis.transports"));
  }

  @Test
  void aRemovedOrChangedDeclarationIsMissingFromTheNewerDumpAndAnAdditionIsNot() {
    String before = "public class a.B {\n  public void run()\n  public int size()\n}\n\n";
    String after = "public class a.B {\n  public void run()\n  public long size()\n  public void added()\n}\n\n";
    assertEquals(List.of("public class a.B :: public int size()"), ApiDump.missing(before, after));
    assertEquals(List.of("public class a.B :: public long size()", "public class a.B :: public void added()"),
        ApiDump.missing(after, before));
    assertEquals(List.of("public class a.B", "public class a.B :: public void run()", "public class a.B :: public int size()")
        .stream().sorted().toList(), ApiDump.missing(before, ""));
  }

  @Test
  void aClassMadeFinalIsAChange() {
    assertEquals(List.of("public class a.B"), ApiDump.missing("public class a.B {\n}\n", "public final class a.B {\n}\n"));
  }
}
