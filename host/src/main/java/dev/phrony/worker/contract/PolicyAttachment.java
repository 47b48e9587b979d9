package dev.phrony.worker.contract;

import java.util.Optional;

/**
 * A policy named by an agent ({@code default_policies}), a binding ({@code policies}) or a Tool
 * document ({@code default_policies}): by logical id ({@code demo.payment-require-approval}, found
 * in the bundle's {@code policies/}) or by file ({@code {ref: policies/large-payment}}).
 *
 * @param logical the policy's {@code namespace.name}
 * @param file the bundle-relative file
 * @param line where it is named
 */
public record PolicyAttachment(Optional<String> logical, Optional<String> file, int line) {

  /** How it is named, for messages. */
  public String describe() {
    return file.map(f -> "ref: " + f).orElseGet(() -> logical.orElse(""));
  }
}
