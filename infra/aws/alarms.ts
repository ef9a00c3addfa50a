import { Duration } from 'aws-cdk-lib';
import {
  Alarm,
  AlarmWidget,
  ComparisonOperator,
  Dashboard,
  type IMetric,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { acknowledge } from './nag.ts';

export interface AlarmsProps {
  /** The Powertools metrics' namespace and `service` dimension (infra/aws/settings.ts). */
  metricsNamespace: string;
  serviceName: string;
  /** An address the topic e-mails (it confirms the subscription once); none: subscribe to the topic yourself. */
  email?: string;
}

export interface LogbookAlarmProps {
  metric: IMetric;
  /** Alarm at this value or above (`below: true`: under it). */
  threshold: number;
  below?: boolean;
  /** How many consecutive periods of the metric must breach (default 1). */
  periods?: number;
  /** A metric without data is normal (default), or itself the trouble (`breaching`: something stopped). */
  missing?: TreatMissingData;
  /** What the alarm means and what to do: its description, in the console and the notification (docs/operations.md "Alarms"). */
  meaning: string;
  action: string;
}

/**
 * The operator's alarms (docs/operations.md "Alarms"): one SNS topic every alarm notifies (optionally e-mailing `email`), and a
 * dashboard with each alarm's figure. Every alarm is made by `add`, which states its meaning and what to do.
 */
export class Alarms extends Construct {
  readonly topic: Topic;
  readonly dashboard: Dashboard;
  readonly alarms: Alarm[] = [];
  private readonly props: AlarmsProps;

  constructor(scope: Construct, id: string, props: AlarmsProps) {
    super(scope, id);
    this.props = props;
    this.topic = new Topic(this, 'Topic', { displayName: 'Logbook alarms', enforceSSL: true });
    if (props.email) this.topic.addSubscription(new EmailSubscription(props.email));
    acknowledge(
      this.topic,
      'SNS2',
      'CloudWatch alarms can publish to an encrypted topic only with a customer-managed KMS key (an idle cost); the notifications carry alarm names and figures, no tenant data',
    );
    this.dashboard = new Dashboard(this, 'Dashboard', { defaultInterval: Duration.days(1) });
  }

  /** A metric of this service (Powertools: the namespace, dimension `service`), summed (or its maximum) over `period`. */
  metric(name: string, period = Duration.minutes(5), statistic: 'Sum' | 'Maximum' = 'Sum'): Metric {
    return new Metric({
      namespace: this.props.metricsNamespace,
      metricName: name,
      dimensionsMap: { service: this.props.serviceName },
      statistic,
      period,
    });
  }

  /** A documented alarm on `metric`, notifying the topic, with its graph on the dashboard. */
  add(id: string, props: LogbookAlarmProps): Alarm {
    const periods = props.periods ?? 1;
    const alarm = new Alarm(this, id, {
      metric: props.metric,
      threshold: props.threshold,
      comparisonOperator: props.below
        ? ComparisonOperator.LESS_THAN_THRESHOLD
        : ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: periods,
      datapointsToAlarm: periods,
      treatMissingData: props.missing ?? TreatMissingData.NOT_BREACHING,
      alarmDescription: `${props.meaning} What to do: ${props.action}`,
    });
    alarm.addAlarmAction(new SnsAction(this.topic));
    this.dashboard.addWidgets(new AlarmWidget({ alarm, title: id, width: 8, height: 5 }));
    this.alarms.push(alarm);
    return alarm;
  }
}
