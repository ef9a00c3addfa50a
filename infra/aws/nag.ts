import { Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * Acknowledges a cdk-nag AwsSolutions finding (`IAM5[Resource::*]`) on `scope` and what it contains, with the
 * reason it does not apply. Every acknowledgment sits beside the resource it concerns.
 */
export function acknowledge(scope: IConstruct, rule: string, reason: string): void {
  Validations.of(scope).acknowledge({ id: `AwsSolutions::AwsSolutions-${rule}`, reason });
}
