import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Stack } from 'aws-cdk-lib';
import { type ILayerVersion, LayerVersion } from 'aws-cdk-lib/aws-lambda';
import { StringParameter } from 'aws-cdk-lib/aws-ssm';
import type { Construct } from 'constructs';

/** The Powertools packages the functions import (package.json): the layer provides them, so they are of its version. */
export const powertoolsPackages = ['logger', 'metrics', 'tracer'] as const;

const nodeModules = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'node_modules');

/** The installed version of the Powertools packages; they must all be of one version, the layer's. */
export function powertoolsVersion(): string {
  const versions = new Set(
    powertoolsPackages.map(
      (name) =>
        (
          JSON.parse(readFileSync(join(nodeModules, '@aws-lambda-powertools', name, 'package.json'), 'utf8')) as {
            version: string;
          }
        ).version,
    ),
  );
  if (versions.size !== 1)
    throw new Error(
      `@aws-lambda-powertools/${powertoolsPackages.join(', ')} must be installed in one version (the layer's), not ${[...versions].join(', ')}`,
    );
  return [...versions][0]!;
}

/** The public SSM parameter that names the Powertools layer of `version` in the deploying region. */
export const powertoolsLayerParameter = (version: string) =>
  `/aws/service/powertools/typescript/generic/all/${version}`;

const layerId = 'PowertoolsLayer';

/**
 * The Powertools for AWS Lambda (TypeScript) layer every function of the stack runs with (the bundles leave
 * `@aws-lambda-powertools/*` out: infra/aws/bundle.ts): the one AWS publishes for the installed version, found by its
 * public SSM parameter when CloudFormation deploys, so the template names no region or account; or `layerArn`
 * (context `powertoolsLayerArn`) where that parameter is not published. Created once per stack.
 */
export function powertoolsLayer(scope: Construct, layerArn?: string): ILayerVersion {
  const stack = Stack.of(scope);
  const existing = stack.node.tryFindChild(layerId) as ILayerVersion | undefined;
  if (existing) return existing;
  const arn = layerArn || StringParameter.valueForStringParameter(stack, powertoolsLayerParameter(powertoolsVersion()));
  return LayerVersion.fromLayerVersionArn(stack, layerId, arn);
}
