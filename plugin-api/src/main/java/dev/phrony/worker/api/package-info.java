/**
 * The phrony-worker plugin API: everything a plugin author compiles against.
 *
 * <p>A plugin is a JAR that lists its {@link dev.phrony.worker.api.ToolHandler} implementations in
 * {@code META-INF/services/dev.phrony.worker.api.ToolHandler}. The host loads each plugin in its
 * own classloader; this package (and the SLF4J API) is shared with the host, everything else the
 * plugin needs it must bundle. Depend on this artifact with scope {@code provided} and never bundle
 * a copy of it: the host refuses a plugin that does.
 *
 * <p>Most handlers extend {@link dev.phrony.worker.api.TypedToolHandler} and work with records.
 */
package dev.phrony.worker.api;
