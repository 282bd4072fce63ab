package io.retrybudget.kotlin

import java.nio.file.Files
import java.nio.file.Path
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** The module README's Kotlin snippet is [ReadmeSnippet]'s lines, so it compiles. */
class ReadmeSnippetTest {
  @Test
  fun theReadmeShowsTheCompiledSnippet() {
    val source = Files.readString(Path.of("src/test/kotlin/io/retrybudget/kotlin/ReadmeSnippet.kt"))
    val snippet = source.substring(source.indexOf("// README:begin\n") + "// README:begin\n".length,
        source.indexOf("    // README:end"))
    val example = snippet.lines().joinToString("\n") { if (it.startsWith("    ")) it.substring(4) else it }.trimEnd()
    val readme = Files.readString(Path.of("README.md"))
    assertTrue(readme.contains("```kotlin\n$example\n```"), "README.md shows ReadmeSnippet's lines as they are:\n$example")
  }
}
